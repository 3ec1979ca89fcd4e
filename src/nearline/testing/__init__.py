"""Test support for nearline and its plug-ins, as ``zarr.testing`` is for zarr: a plug-in's
tests subclass the conformance suite of what it implements.

Each module is imported on its own (this package imports none of them, so that what needs
pytest or hypothesis, the ``dev`` extra, is loaded only by the tests that use it):

- conformance suites: ``catalogue`` (``CatalogueTests``, archive catalogues),
  ``sink`` (``SinkTests``, burst's output formats), ``reader`` (``ReaderTests``, granule
  readers), ``executor`` (``ExecutorTests``, where runs execute) and ``stores``
  (``StoreTests``, the service's stores on a state database);
- ``items``: items, collections and filled catalogues to test a catalogue with;
- ``reference``: a reference catalogue, searched by brute force;
- ``strategies``: hypothesis strategies (catalogue searches, GeoJSON geometries);
- ``pgcluster``: a throwaway PostgreSQL cluster (also used by ``nearline doctor postgis``).

nearline.testing may import every room; no room imports it, but the doctor, which starts a
throwaway cluster to prove PostGIS works.
"""
