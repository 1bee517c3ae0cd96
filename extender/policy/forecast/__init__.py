"""When will a waiting gang start: the queue run forward over sampled run times (`montecarlo`), its bands
corrected by past errors in the same cluster (`calibration`), read from a snapshot (`inputs`)."""
