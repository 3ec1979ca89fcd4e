"""Test points that find the mistakes a projection kernel makes."""

from __future__ import annotations

import math

import numpy as np

from nearline.grid import _igh as igh

BOUNDARY = math.degrees(igh.BOUNDARY_LATITUDE)  # sinusoidal | Mollweide
LOBE_EDGES = (-180.0, -100.0, -40.0, -20.0, 80.0, 180.0)  # the interruptions, both hemispheres
TINY = 1e-9  # degrees, ~0.1 mm


def awkward_points(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random points on the sphere plus points on and beside every lobe edge, on both sides
    of the sinusoidal/Mollweide boundary, at the equator, the poles and the date line."""
    rng = np.random.default_rng(seed)
    lon = rng.uniform(-180, 180, n)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))
    edge_lon = np.array([e + d for e in LOBE_EDGES for d in (-TINY, 0.0, TINY)])
    edge_lon = edge_lon[np.abs(edge_lon) <= 180]
    north = [1e-12, BOUNDARY - TINY, BOUNDARY, BOUNDARY + TINY, 60, 89.9, 89.99, 90]
    edge_lat = np.array([0.0, -0.0, *north, *(-v for v in north)])
    grid_lon, grid_lat = np.meshgrid(edge_lon, edge_lat)
    lobe_lat = rng.uniform(-90, 90, (edge_lon.size, 200))  # along each edge, pole to pole
    lobe_lon = np.broadcast_to(edge_lon[:, None], lobe_lat.shape)
    lon = np.concatenate([lon, grid_lon.ravel(), lobe_lon.ravel()])
    lat = np.concatenate([lat, grid_lat.ravel(), lobe_lat.ravel()])
    return lon, lat
