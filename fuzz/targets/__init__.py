"""Fuzz targets; each module registers its targets with fuzz.registry on import."""
