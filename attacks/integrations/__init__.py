"""Adapters to other libraries: ``opacus_accountant`` (tsdp's accountant as an Opacus ``IAccountant``)."""
