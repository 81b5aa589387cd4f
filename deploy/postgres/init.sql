-- One database per service on the shared server (deploy/compose.yaml runs
-- this once, when the data volume is created).
CREATE DATABASE identity;
CREATE DATABASE box;
CREATE DATABASE courier;
CREATE DATABASE keyholder;
