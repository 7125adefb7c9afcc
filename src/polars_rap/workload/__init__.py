"""The queries: one CSR shape for every class (:mod:`~polars_rap.workload.queries`, the kernels'
contract) and the builders of the query families from the public domain
(:mod:`~polars_rap.workload.builders`).
"""
