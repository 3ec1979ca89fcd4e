"""openEO's error document (``{"id", "code", "message", "links"}``) and the code each of
the service's refusals carries, so that an openEO client reads every refusal of the openEO
face as openEO's own (``OpenEoApiError.code``), never as a bare status."""

from __future__ import annotations

from typing import Any

from nearline.errors import CollectionNotFound, OpenEOError

ERRORS_DOC = "https://api.openeo.org/1.2.0/errors.json"
# the code of a refusal that names nothing more precise, by its status (openEO's errors.json
# where it has one; BadRequest and MethodNotAllowed as the openEO back-ends spell them)
BY_STATUS = {
    400: "BadRequest",
    401: "AuthenticationRequired",
    403: "PermissionsInsufficient",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "RequestTimeout",
    409: "Conflict",
    413: "PayloadTooLarge",
    415: "ContentTypeInvalid",
    501: "FeatureUnsupported",
    503: "InfrastructureBusy",
}


def error_code(status: int, error: BaseException | None = None) -> str:
    """The openEO code of a refusal with ``status`` (and the error behind it, if any).

    Parameters
    ----------
    status
        The HTTP status answered.
    error
        What was raised, when something was: an :class:`OpenEOError` names its code, a
        :class:`CollectionNotFound` is openEO's ``CollectionNotFound``.
    """
    if isinstance(error, OpenEOError):
        return error.openeo_code
    if isinstance(error, CollectionNotFound):
        return "CollectionNotFound"
    return BY_STATUS.get(status, "Internal" if status >= 500 else "BadRequest")


def error_document(code: str, message: str, *, request_id: str | None) -> dict[str, Any]:
    """An openEO error: the code, a message safe to show, the request id (what the service's
    log names the request by) and a link to openEO's list of codes.

    Parameters
    ----------
    code
        openEO's error code (:func:`error_code`).
    message
        What went wrong and what to do.
    request_id
        The request's id, if it has one.
    """
    document: dict[str, Any] = {"code": code, "message": message}
    if request_id:
        document["id"] = request_id
    document["links"] = [
        {"rel": "about", "type": "application/json", "href": ERRORS_DOC,
         "title": "openEO's error codes"}
    ]  # fmt: skip
    return document
