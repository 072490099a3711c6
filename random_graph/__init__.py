"""Random valid graphs run on a driver and on the reference, compared with NNAPI criteria."""
