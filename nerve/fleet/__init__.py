"""Many hosts: sealed segments shipped to an Apache Iceberg table, queried and verified."""
