"""The data pages embed with ``tojson``: safe inside a <script> element, valid JSON for the
browser's JSON.parse (NaN as null), keys as Jinja's json.dumps gave them."""

from __future__ import annotations

import json

from forgetmap.web.templating import templates


def test_tojson_escapes_for_the_page_and_writes_valid_json():
    value = {
        "b": "</script><script>alert(1)</script>",
        "a": float("nan"),
        3: "it's & <b>",
        "n": [1, 2.5, None, True],
    }
    html = templates.env.from_string("{{ value | tojson }}").render(value=value)
    assert "<" not in html and ">" not in html and "&" not in html and "'" not in html
    assert json.loads(html) == {
        "3": "it's & <b>",
        "a": None,
        "b": "</script><script>alert(1)</script>",
        "n": [1, 2.5, None, True],
    }
    assert html.index('"3"') < html.index('"a"') < html.index('"b"')  # keys sorted
