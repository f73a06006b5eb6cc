// The integration tests are compiled with the package traits on (scripts/test-integrations).
