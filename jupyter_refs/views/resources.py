"""Loading BokehJS into the page, offline, before every view.

``JUPYTER_REFS_BOKEH`` chooses how:

* ``server`` (default): from the Jupyter server's own copy of bokeh's static
  files (see :mod:`jupyter_refs.server`).  The notebook keeps a few hundred
  bytes of loader, not megabytes of JavaScript;
* ``inline``: embedded in the output by bokeh (works anywhere, ~1 MB per load);
* ``cdn``: bokeh's CDN, for machines that have one.

Why the server loader fetches synchronously: jupyter_bokeh's widget view needs
``window.Bokeh`` the moment it renders, and bokeh's own loader injects
``<script src>`` tags that finish later — the widget would render first and
fail.  A script element whose *text* is set runs as it is inserted, so the
loader output (displayed just before the widget) has defined ``Bokeh`` by the
time the widget's output renders.  The base URL is read from the page's own
``jupyter-config-data``, so JupyterHub prefixes need no kernel-side guess.

Why before every view, not once per kernel: a page is not a kernel.  A reloaded
or reopened page on a running kernel has no ``window.Bokeh`` until something
loads it again, and the kernel cannot see pages come and go.  The loader is a
few hundred bytes and does nothing when the page already has this BokehJS, so
each view brings it.  Only ``inline`` (megabytes each time) stays once per
kernel; after a page reload, ``ensure_bokehjs(force=True)`` brings it back.
"""

from __future__ import annotations

import json
import os

from ..server import BOKEH_PREFIX

_loaded = False
_FILES = ("bokeh", "bokeh-widgets")

_LOADER = """(function () {
  var version = %(version)s;
  if (window.Bokeh && window.Bokeh.version === version) { return; }
  var cfg = document.getElementById("jupyter-config-data");
  var base = cfg ? (JSON.parse(cfg.textContent).baseUrl || "/") : "/";
  var files = %(files)s;
  for (var i = 0; i < files.length; i++) {
    var url = base + %(prefix)s + "static/js/" + files[i] + ".min.js";
    var xhr = new XMLHttpRequest();
    xhr.open("GET", url, false);
    xhr.send(null);
    if (xhr.status !== 200) {
      console.error("jupyter_refs: cannot load " + url + " (" + xhr.status + "): is the "
                    + "jupyter_refs server extension enabled?");
      return;
    }
    var script = document.createElement("script");
    script.text = xhr.responseText;
    document.head.appendChild(script);
  }
})();"""


def loader_js() -> str:
    import bokeh

    return _LOADER % {"version": json.dumps(bokeh.__version__), "files": json.dumps(list(_FILES)),
                      "prefix": json.dumps(BOKEH_PREFIX)}


def ensure_bokehjs(force: bool = False) -> None:
    """Emit the BokehJS loader into the notebook before a view is shown."""
    global _loaded
    mode = os.environ.get("JUPYTER_REFS_BOKEH", "server")
    if mode == "inline" and _loaded and not force:
        return
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    if mode in ("inline", "cdn"):
        from bokeh.io import output_notebook
        from bokeh.resources import CDN, INLINE

        output_notebook(INLINE if mode == "inline" else CDN, hide_banner=True)
    else:
        display({"application/javascript": loader_js()}, raw=True)
    _loaded = True
