"""Sessions across kernels: resume, record and replay, bundles."""
