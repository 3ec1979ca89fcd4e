"""The openEO face's discovery through the openEO Python client: the well-known versions and
capabilities, the file formats, the processes with their official specifications, the UDF
runtimes, the (absent) sign-in provider and who the caller is."""

from __future__ import annotations

import httpx
import openeo
import pytest
from openeo.rest import OpenEoApiError

from nearline.openeo import PROCESS_IDS, process_spec

from ..live_service import LiveService
from .conftest import connect


def test_connects_through_the_well_known_document(live: LiveService) -> None:
    versions = httpx.get(f"{live.url}/.well-known/openeo").json()["versions"]
    assert versions == [
        {"url": f"{live.url}/openeo/1.2", "api_version": "1.2.0", "production": False}
    ]
    connection = connect(live)
    assert connection.root_url == f"{live.url}/openeo/1.2"
    capabilities = connection.capabilities()
    assert capabilities.api_version() == "1.2.0"
    document = capabilities.capabilities
    assert document["id"] == "nearline"
    assert document["stac_version"] == "1.1.0"
    served = {entry["path"]: entry["methods"] for entry in document["endpoints"]}
    assert served == {
        "/": ["GET"],
        "/conformance": ["GET"],
        "/file_formats": ["GET"],
        "/udf_runtimes": ["GET"],
        "/service_types": ["GET"],
        "/collections": ["GET"],
        "/collections/{collection_id}": ["GET"],
        "/processes": ["GET"],
        "/me": ["GET"],
        "/credentials/basic": ["GET"],
        "/result": ["POST"],
        "/validation": ["POST"],
        "/jobs": ["GET", "POST"],
        "/jobs/{job_id}": ["GET", "PATCH", "DELETE"],
        "/jobs/{job_id}/results": ["GET", "POST", "DELETE"],
        "/jobs/{job_id}/logs": ["GET"],
        "/jobs/{job_id}/estimate": ["GET"],
    }  # no provider set: /credentials/oidc is not listed, nor anything not served yet
    assert capabilities.supports_endpoint("/jobs", "POST")
    assert not capabilities.supports_endpoint("/process_graphs", "GET")
    assert connection.get("/conformance").json() == {"conformsTo": ["https://api.openeo.org/1.2.0"]}


def test_file_formats_are_netcdf_and_geotiff_for_output(alice: openeo.Connection) -> None:
    formats = alice.list_file_formats()
    assert formats["input"] == {}
    assert sorted(formats["output"]) == ["GTiff", "netCDF"]
    assert all(f["gis_data_types"] == ["raster"] for f in formats["output"].values())


def test_processes_are_exactly_the_supported_set_with_their_official_specs(
    alice: openeo.Connection,
) -> None:
    listed = alice.list_processes()
    assert [process["id"] for process in listed] == list(PROCESS_IDS)
    assert listed == [process_spec(process_id) for process_id in PROCESS_IDS]
    ndvi = alice.describe_process("ndvi")
    assert [p["name"] for p in ndvi["parameters"]] == ["data", "nir", "red", "target_band"]


def test_udf_runtimes_say_python_runs_in_batch_jobs(alice: openeo.Connection) -> None:
    runtimes = alice.list_udf_runtimes()
    assert list(runtimes) == ["Python"]
    python = runtimes["Python"]
    assert python["type"] == "language"
    assert python["experimental"] is True
    assert python["default"] in python["versions"]
    assert "batch jobs" in python["description"]
    assert "openeo" in python["versions"][python["default"]]["libraries"]


def test_no_secondary_services_are_offered(alice: openeo.Connection) -> None:
    assert alice.list_service_types() == {}


def test_no_provider_means_an_empty_list(live: LiveService) -> None:
    """The client lists basic sign-in (from the capabilities), and no OpenID Connect one."""
    assert [provider["type"] for provider in connect(live).list_auth_providers()] == ["basic"]
    answer = httpx.get(f"{live.url}/openeo/1.2/credentials/oidc")
    assert answer.status_code == 200
    assert answer.json() == {"providers": []}


def test_me_names_the_signed_in_user_in_every_token_form(live: LiveService) -> None:
    assert connect(live, "alice").describe_account()["user_id"] == "alice"
    bare = connect(live)
    bare.authenticate_bearer_token(live.tokens["bob"])  # a bare token, as nearline's own API
    account = bare.describe_account()
    assert account["user_id"] == "bob"
    assert account["name"] == "bob"
    assert account["links"][0]["href"] == f"{live.url}/openeo/1.2/me"


@pytest.mark.parametrize(
    ("token", "status", "code"),
    [(None, 401, "AuthenticationRequired"), ("basic//nl_not-a-token", 403, "TokenInvalid")],
)
def test_me_refuses_without_a_valid_token(
    live: LiveService, token: str | None, status: int, code: str
) -> None:
    connection = connect(live)
    if token:
        connection.authenticate_bearer_token(token)
    with pytest.raises(OpenEoApiError) as refused:
        connection.describe_account()
    assert (refused.value.http_status_code, refused.value.code) == (status, code)
    assert refused.value.id  # the request id the service's log names it by
