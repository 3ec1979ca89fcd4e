"""Test support for nearline and its plug-ins, as ``zarr.testing`` is for zarr.

Each module is imported on its own (this package imports none of them, so that what needs
pytest or hypothesis, the ``dev`` extra, is loaded only by the tests that use it):

- ``pgcluster``: a throwaway PostgreSQL cluster (also used by ``nearline doctor postgis``).

nearline.testing may import every room; no room imports it, but the doctor, which starts a
throwaway cluster to prove PostGIS works.
"""
