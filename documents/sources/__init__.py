"""Where a channel's documents live besides uploads: folders, S3 buckets and
websites behind one interface (``base.Source``), their kinds in one table
(``registry.KINDS``). Syncing a listing into a channel is not this package's
job; it only lists and opens, within the operator's rules."""
