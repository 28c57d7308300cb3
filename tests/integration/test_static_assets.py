"""/static: pages name assets by version, a versioned asset is cached for a year, text assets go
gzip-compressed to a client that accepts it, and a revalidation is a 304 in either encoding."""

from __future__ import annotations

import hashlib
import os
import re

import pytest
from fastapi.testclient import TestClient
from forgetmap.runtime.resources import resource_dir
from forgetmap.web import create_app
from forgetmap.web.assets import IMMUTABLE, REVALIDATE, Assets
from starlette.applications import Starlette
from starlette.routing import Mount

pytestmark = pytest.mark.integration

PLOTLY = resource_dir("static") / "plotly.min.js"


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(tmp_path / "assets.duckdb")) as c:
        yield c


def _asset_urls(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="(/static/[^"]+)"', html)


def test_every_page_names_its_assets_by_their_current_version(client):
    for page in ("/", "/theory", "/import", "/atlas"):
        urls = _asset_urls(client.get(page).text)
        assert urls, page
        for url in urls:
            name, version = re.fullmatch(r"/static/([^?]+)\?v=([0-9a-f]{12})", url).groups()
            data = (resource_dir("static") / name).read_bytes()
            assert version == hashlib.md5(data).hexdigest()[:12], url
    assert "/static/swagger/swagger-ui-bundle.js?v=" in client.get("/docs").text


def test_plotly_goes_compressed_and_cached_for_a_year(client):
    url = next(u for u in _asset_urls(client.get("/").text) if "plotly" in u)
    answer = client.get(url, headers={"Accept-Encoding": "gzip, deflate, br"})
    assert answer.status_code == 200
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.headers["cache-control"] == IMMUTABLE
    assert "Accept-Encoding" in answer.headers["vary"]
    assert answer.headers["content-type"].startswith("text/javascript")
    assert answer.content == PLOTLY.read_bytes()  # httpx decoded what was sent
    sent = answer.num_bytes_downloaded
    assert sent == int(answer.headers["content-length"])
    assert sent < PLOTLY.stat().st_size * 0.35, sent  # 4.8 MB -> about 1.47 MB

    again = client.get(
        url, headers={"Accept-Encoding": "gzip", "If-None-Match": answer.headers["etag"]}
    )
    assert again.status_code == 304 and again.content == b""
    assert again.headers["cache-control"] == IMMUTABLE


def test_without_gzip_or_without_the_version_the_file_goes_as_it_is(client):
    plain = client.get("/static/plotly.min.js", headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "content-encoding" not in plain.headers
    assert plain.headers["cache-control"] == REVALIDATE  # no version: revalidate each time
    assert int(plain.headers["content-length"]) == PLOTLY.stat().st_size
    old = client.get("/static/plotly.min.js?v=000000000000", headers={"Accept-Encoding": "gzip"})
    assert old.headers["cache-control"] == REVALIDATE  # an old version is not kept a year
    refused = client.get("/static/map.js", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in refused.headers
    # the same ETag, weak when compressed, so either encoding revalidates to a 304
    tag = plain.headers["etag"]
    assert old.headers["etag"] == "W/" + tag
    for accept in ("gzip", "identity"):
        answer = client.get(
            "/static/plotly.min.js",
            headers={"Accept-Encoding": accept, "If-None-Match": f"W/{tag}"},
        )
        assert answer.status_code == 304, accept


def test_small_files_ranges_and_head_go_uncompressed(client):
    favicon = client.get("/static/favicon.svg", headers={"Accept-Encoding": "gzip"})
    assert favicon.status_code == 200 and "content-encoding" not in favicon.headers  # < 1 KB
    part = client.get(
        "/static/plotly.min.js", headers={"Accept-Encoding": "gzip", "Range": "bytes=0-99"}
    )
    assert part.status_code == 206 and part.content == PLOTLY.read_bytes()[:100]
    head = client.head("/static/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert head.status_code == 200 and "content-encoding" not in head.headers
    assert client.get("/static/../pyproject.toml").status_code == 404


def test_a_file_changed_on_disk_gets_a_new_version_and_body(tmp_path):
    folder = tmp_path / "static"
    folder.mkdir()
    script = folder / "page.js"
    script.write_text("console.log(1);\n" * 200)
    assets = Assets(folder)
    first = assets.url("page.js")
    with TestClient(Starlette(routes=[Mount("/static", assets)])) as c:
        before = c.get(first, headers={"Accept-Encoding": "gzip"})
        assert before.headers["content-encoding"] == "gzip"
        assert before.content == script.read_bytes()
        script.write_text("console.log(2);\n" * 300)
        os.utime(script, ns=(1, 2))  # another size and time, as a replaced file has
        second = assets.url("page.js")
        assert second != first
        answer = c.get(second, headers={"Accept-Encoding": "gzip"})
        assert answer.content == script.read_bytes()
        assert answer.headers["cache-control"] == IMMUTABLE
        assert c.get(first).headers["cache-control"] == REVALIDATE
