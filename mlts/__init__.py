"""MLTS: real TFLite models imported into NNAPI models; latency, accuracy and crash/hang stress."""
