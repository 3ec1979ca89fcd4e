"""openeo: nearline as an openEO back-end (API 1.2), as documents and rules with no HTTP: the
capabilities and what is served, gridded collections described as data cubes (swath ones as
not), the predefined processes with their official specifications, openEO's bearer tokens,
sign-in provider and user document, openEO's error codes, and batch jobs: their drafts
(kept in the state database), their documents read from the nearline order running each, and
the built-in ``openeo`` process's program (``python -m nearline.openeo.job``), which runs a
graph and its UDFs inside the sandbox. The service mounts them (nearline.api, under
/openeo/1.2)."""

from __future__ import annotations

from nearline.openeo._account import (
    access_token,
    basic_credentials,
    me_document,
    oidc_providers,
    provider_id,
)
from nearline.openeo._batch import (
    LOCKED,
    Order,
    ResultFile,
    ResultLinks,
    job_document,
    job_limits,
    log_entries,
    openeo_status,
    results_item,
)
from nearline.openeo._capabilities import (
    API_VERSION,
    PATH,
    backend_version,
    capabilities,
    conformance,
    file_formats,
    service_types,
    udf_runtimes,
    well_known,
)
from nearline.openeo._cubes import (
    DATACUBE,
    NOT_A_CUBE,
    band_summaries,
    cube_collection,
    cube_dimensions,
    not_a_cube,
    reference_system,
    swath_collection,
)
from nearline.openeo._errors import error_code, error_document
from nearline.openeo._graph import (
    LoadCall,
    check_graph,
    load_calls,
    process_graph_of,
    uses_process,
)
from nearline.openeo._job_store import BatchJob, BatchJobs, job_not_found
from nearline.openeo._load import Stack, load_cube, temporal_span
from nearline.openeo._processes import PROCESS_IDS, process_list, process_spec
from nearline.openeo._run import Run, UdfRunner, run_graph
from nearline.openeo._save import Saved, output_format, save
from nearline.openeo._udf import run_udf_in_process

__all__ = [
    "API_VERSION",
    "DATACUBE",
    "LOCKED",
    "NOT_A_CUBE",
    "PATH",
    "PROCESS_IDS",
    "BatchJob",
    "BatchJobs",
    "LoadCall",
    "Order",
    "ResultFile",
    "ResultLinks",
    "Run",
    "Saved",
    "Stack",
    "UdfRunner",
    "access_token",
    "backend_version",
    "band_summaries",
    "basic_credentials",
    "capabilities",
    "check_graph",
    "conformance",
    "cube_collection",
    "cube_dimensions",
    "error_code",
    "error_document",
    "file_formats",
    "job_document",
    "job_limits",
    "job_not_found",
    "load_calls",
    "load_cube",
    "log_entries",
    "me_document",
    "not_a_cube",
    "oidc_providers",
    "openeo_status",
    "output_format",
    "process_graph_of",
    "process_list",
    "process_spec",
    "provider_id",
    "reference_system",
    "results_item",
    "run_graph",
    "run_udf_in_process",
    "save",
    "service_types",
    "swath_collection",
    "temporal_span",
    "udf_runtimes",
    "uses_process",
    "well_known",
]
