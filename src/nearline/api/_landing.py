"""The landing page a browser gets: what this service is and how to use it, in plain HTML
with no scripts, and a link to the web page at /app/."""

from __future__ import annotations

from html import escape

from nearline import __version__
from nearline.orders import Service

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>nearline</title>
<style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;
line-height:1.5}}code,pre{{background:#f3f3f3;padding:.1rem .3rem}}pre{{padding:.6rem}}</style>
</head><body>
<h1>nearline {version}</h1>
<p>Near-archive processing for Earth-science data: search this archive through the
<a href="{base}/api.html">STAC API</a>, deploy your own reduction algorithms and order them to
run next to the data through OGC API&nbsp;-&nbsp;Processes.</p>
<p><a href="{base}/app/">Open the web page</a>: search on a map, deploy algorithms, order,
watch jobs and subscriptions (sign in with your token).</p>
<h2>Start</h2>
<p>Every call but this page, <a href="{base}/conformance">/conformance</a> and
<a href="{base}/api">/api</a> (the OpenAPI document) needs an API token:
<code>Authorization: Bearer TOKEN</code>. The service's operator makes one with
<code>nearline users add NAME</code>.</p>
<pre>curl -H "Authorization: Bearer $TOKEN" {base}/collections
curl -H "Authorization: Bearer $TOKEN" "{base}/search?bbox=-10,35,30,60&amp;limit=5"
curl -H "Authorization: Bearer $TOKEN" {base}/processes</pre>
<h2>Here</h2>
<ul><li>{processes} public process(es): {names}</li>
<li>Built-in: the AVHRR Pathfinder composite (a day of orbits to a global 12-band image)</li></ul>
</body></html>
"""


def landing_html(service: Service, base: str) -> str:
    public = [a for a in service.algorithms.list(viewer=None) if a.public]
    names = ", ".join(escape(a.id) for a in public) or "none yet"
    return PAGE.format(version=__version__, base=escape(base), processes=len(public), names=names)
