"""Usage, cost and telemetry of trials: the model proxy, its records, prices and OTLP spans."""
