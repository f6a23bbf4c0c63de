"""A cluster's address is checked for its form without a connection (a bad one is one ConfigError naming
``cluster``); whether it answers is tests/cli/test_cluster_connect.py's."""
import pytest

from tsdp.executor.cluster import check_address
from tsdp.theorems.config import ConfigError


@pytest.mark.parametrize("address,parsed", [
    (None, None), ("auto", None),
    ("127.0.0.1:8786", ("tcp", "127.0.0.1", 8786)), ("tcp://host:1", ("tcp", "host", 1)),
    ("tls://host:65535", ("tls", "host", 65535)), ("[::1]:8786", ("tcp", "::1", 8786)),
    (" tcp://host:80 ", ("tcp", "host", 80)),
])
def test_a_well_formed_address_is_parsed(address, parsed):
    assert check_address(address) == parsed


@pytest.mark.parametrize("address", ["", " ", "host", "host:", ":8786", "host:0", "host:65536", "host:-1",
                                     "host:80x", "udp://host:80", "http://host:80", "tcp://:80", "tcp://host"])
def test_a_malformed_address_is_one_error_naming_cluster(address):
    with pytest.raises(ConfigError) as error:
        check_address(address)
    assert error.value.parameter == "cluster"
