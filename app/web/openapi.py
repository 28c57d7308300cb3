"""The OpenAPI document and the API's one error shape for invalid requests."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from forgetmap.contract.base import request_problem_text
from forgetmap.contract.errors import ErrorBody
from forgetmap.web.responses import errors


def validation_message(exc: RequestValidationError) -> str:
    """One line per problem, e.g. ``query lr: Input should be less than or equal to 2``."""
    return request_problem_text(exc.errors())


TOKEN_SCHEME = "token"
TOKEN = {
    "type": "http",
    "scheme": "bearer",
    "description": "An API token (`forgetmap token create NAME --role read|submit|worker|admin`), "
    "sent as `Authorization: Bearer <token>`. The write operations need one of the right role; "
    "the reads take one, needed only when the app is private (FORGETMAP_PRIVATE=1).",
}
"""The one security scheme: /docs shows its Authorize button and sends the token it is given."""


def install_openapi(app: FastAPI) -> None:
    """The OpenAPI document, honest about errors: every operation with parameters or a body
    declares 422, every one with a body 400 and 413, every one but /healthz 401 (a revoked token,
    or FORGETMAP_PRIVATE=1), all in the one error shape (forgetmap.contract.errors.ErrorBody).
    Routes declare their own 403/404. Every operation but /healthz names the bearer token scheme:
    the writes (every method but GET) as required, the reads as optional."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            schema.setdefault("components", {})["securitySchemes"] = {TOKEN_SCHEME: TOKEN}
            components = schema["components"].setdefault("schemas", {})
            components["ErrorBody"] = ErrorBody.model_json_schema()
            ref = {"$ref": "#/components/schemas/ErrorBody"}
            for path, operations in schema.get("paths", {}).items():
                for method, operation in operations.items():
                    if path != "/healthz":  # a token, or (reads) none: /docs sends it
                        read = method in ("get", "head")
                        operation["security"] = [{TOKEN_SCHEME: []}] + ([{}] if read else [])
                    responses = operation.setdefault("responses", {})
                    codes = [] if path == "/healthz" else [401]
                    if operation.get("requestBody"):
                        codes += [
                            400,
                            413,
                        ]  # not JSON at all; over its limit (forgetmap.web.limits)
                    if operation.get("parameters") or operation.get("requestBody"):
                        codes.append(422)
                    for code in codes:
                        responses[str(code)] = {
                            "description": errors(code)[code]["description"],
                            "content": {"application/json": {"schema": ref}},
                        }
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    # FastAPI's documented way to customize the schema; its types declare openapi a method
    app.openapi = openapi  # type: ignore[method-assign]
