"""A small Jupyter server extension: serve BokehJS from the server itself.

There is no CDN on an offline machine, and inlining BokehJS into every output
adds megabytes to each saved notebook.  Instead the server serves bokeh's own
static files (the very version installed next to the kernel) at
``{base_url}jupyter-refs/bokeh/static/…``, and the kernel points bokeh's
loader there (``views/resources.py``).  ``pip install`` enables the extension
through ``etc/jupyter/jupyter_server_config.d/jupyter_refs.json``.
"""

from __future__ import annotations

import os
from typing import Any

BOKEH_PREFIX = "jupyter-refs/bokeh/"


def bokeh_static_dir() -> str:
    import bokeh

    return os.path.join(os.path.dirname(bokeh.__file__), "server", "static")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_refs.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join
    from tornado.web import StaticFileHandler

    web_app = serverapp.web_app
    route = url_path_join(web_app.settings["base_url"], BOKEH_PREFIX, "static", "(.*)")
    web_app.add_handlers(".*$", [(route, StaticFileHandler, {"path": bokeh_static_dir()})])
    serverapp.log.info("jupyter_refs: serving BokehJS at %s", route)
