"""The fault tests share the adapter tests' real servers and cold start (tests/adapters/conftest.py): moto's S3
server, gcp-storage-emulator, the tiny bundle's warm service and the imported entry modules."""

from tests.adapters.conftest import (  # noqa: F401 - pytest finds fixtures by name
    adapter_config,
    adapter_env,
    entry_modules,
    gcs_client,
    gcs_emulator_host,
    moto_endpoint,
    s3_client,
    startup,
)
