"""Templates of the report sections that audit families contribute (a package so setuptools ships them)."""
