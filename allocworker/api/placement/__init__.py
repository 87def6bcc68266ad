"""OpenStack Placement's HTTP API (microversions 1.0-1.39), mapped onto
allocworker's service layer."""
