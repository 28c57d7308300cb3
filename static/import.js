// The "Import results" page: sends the chosen file, or the chosen folder as a tar built here
// (headers and the files themselves as one Blob: the browser streams it, nothing is read into
// memory), to POST /import with the form's options; then opens the job's page. Every check and
// message is the app's (the same as `forgetmap import`).
(function () {
  "use strict";
  const form = document.getElementById("import-form");
  if (!form) return;
  const error = document.getElementById("import-error");
  const sent = document.getElementById("import-sent");
  const kind = document.getElementById("import-kind");

  function showKind() {
    form.querySelectorAll("[data-kinds]").forEach(function (el) {
      el.hidden = !el.dataset.kinds.split(" ").includes(kind.value);
    });
  }
  kind.addEventListener("change", showKind);
  showKind();

  const encoder = new TextEncoder();

  function field(header, offset, length, text) {
    const bytes = encoder.encode(text);
    if (bytes.length > length) throw new Error("a tar field is too long: " + text);
    header.set(bytes, offset);
  }

  function octal(value, length) {
    return value.toString(8).padStart(length - 1, "0") + "\0";
  }

  // a pax record "LEN path=VALUE\n", LEN counting its own digits
  function paxRecord(key, value) {
    const body = " " + key + "=" + value + "\n";
    const n = encoder.encode(body).length;
    let length = n + String(n).length;
    if (String(length).length !== String(n).length) length = n + String(length).length;
    return encoder.encode(length + body);
  }

  // a POSIX ustar header; a path longer than its 100 (+155) bytes comes in a pax record before it
  function header(path, size) {
    if (encoder.encode(path).length <= 100) return [block(path, size, "0", "")];
    const cut = path.lastIndexOf("/", 155);
    if (cut > 0 && encoder.encode(path.slice(0, cut)).length <= 155 &&
        encoder.encode(path.slice(cut + 1)).length <= 100) {
      return [block(path.slice(cut + 1), size, "0", path.slice(0, cut))];
    }
    const record = paxRecord("path", path);
    return [block("PaxHeader", record.length, "x", ""), record, padding(record.length),
            block("long-name", size, "0", "")];
  }

  function block(name, size, type, prefix) {
    const h = new Uint8Array(512);
    field(h, 0, 100, name);
    field(h, 100, 8, octal(0o600, 8));
    field(h, 108, 8, octal(0, 8));
    field(h, 116, 8, octal(0, 8));
    field(h, 124, 12, octal(size, 12));
    field(h, 136, 12, octal(Math.floor(Date.now() / 1000), 12));
    h.fill(32, 148, 156); // the checksum counts its own field as spaces
    field(h, 156, 1, type);
    field(h, 257, 6, "ustar\0");
    field(h, 263, 2, "00");
    if (prefix) field(h, 345, 155, prefix);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += h[i];
    field(h, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
    return h;
  }

  function padding(size) {
    return new Uint8Array((512 - (size % 512)) % 512);
  }

  function tarOf(files) {
    const parts = [];
    for (const file of files) {
      parts.push(...header(file.webkitRelativePath || file.name, file.size), file, padding(file.size));
    }
    parts.push(new Uint8Array(1024));
    return new Blob(parts, { type: "application/x-tar" });
  }

  function fail(message) {
    error.textContent = message;
    error.hidden = false;
    sent.textContent = "";
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    error.hidden = true;
    const file = document.getElementById("import-file").files[0];
    const folder = document.getElementById("import-folder").files;
    let body;
    let filename;
    if (folder.length) {
      body = tarOf(Array.from(folder));
      filename = (folder[0].webkitRelativePath.split("/")[0] || "folder") + ".tar";
    } else if (file) {
      body = file;
      filename = file.name;
    } else {
      fail("choose a file or a folder to import");
      return;
    }
    const data = new FormData(form);
    const query = new URLSearchParams({ kind: kind.value, filename: filename });
    const visible = function (name) {
      const input = form.querySelector("[name=" + name + "]");
      return input && !input.closest("[hidden]");
    };
    for (const name of ["model", "metric", "evaluation_result_id", "scorer"]) {
      if (visible(name) && data.get(name)) query.append(name, data.get(name));
    }
    if (visible("filter")) {
      for (const f of String(data.get("filter") || "").split(",")) {
        if (f.trim()) query.append("filter", f.trim());
      }
    }
    if (visible("seed") && (kind.value === "lm-eval" || data.get("seed_rule") === "given")) {
      query.append("seed", data.get("seed"));
    }
    if (visible("latest") && data.get("latest")) query.append("latest", "true");
    sent.textContent = "uploading " + body.size.toLocaleString() + " bytes…";
    try {
      const reply = await fetch("/import?" + query.toString(), {
        method: "POST",
        body: body,
        // HX-Request: errors come back as the app's one-line JSON, not as an error page
        headers: { "X-CSRF-Token": form.dataset.csrf, "HX-Request": "true",
                   "Content-Type": "application/octet-stream" },
      });
      const answer = await reply.json().catch(function () { return {}; });
      if (reply.status === 401 && reply.headers.get("HX-Redirect")) {
        window.location = reply.headers.get("HX-Redirect");
      } else if (reply.status === 202) {
        window.location = answer.url;
      } else {
        fail(answer.detail || "the upload failed (" + reply.status + ")");
      }
    } catch (exc) {
      fail("the upload did not reach the app: " + exc.message);
    }
  });
})();
