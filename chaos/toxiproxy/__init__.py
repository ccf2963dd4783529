"""A Toxiproxy-compatible server and its launcher (ring: drivers; :mod:`.model` is pure).

``python -m chaos.toxiproxy`` serves Toxiproxy's v2 HTTP API with its toxics; see README.md here.
:func:`chaos.toxiproxy.launch.toxiproxy_server` yields the API URL of a real or of this server.
"""
