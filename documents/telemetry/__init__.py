"""What an operator watches Quire with: Prometheus metrics (metrics) and the
readiness checks behind /readyz (readiness)."""
