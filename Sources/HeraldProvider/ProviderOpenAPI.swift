/// The OpenAPI 3.1 description of the provider service's REST API, served at `/openapi.json`
/// and checked by the tests against the routes the server answers.
public enum ProviderOpenAPI {
    public static let document = #"""
    {
      "openapi": "3.1.0",
      "info": {"title": "Herald provider service", "version": "1.0.0",
               "description": "The app's own server: device registrations, localized sends to a token, a user or a segment, idempotency, pruning of unregistered tokens, send reports."},
      "paths": {
        "/health": {"get": {"summary": "Liveness", "responses": {"200": {"description": "ok"}}}},
        "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "the document"}}}},
        "/v1/registrations": {
          "post": {"summary": "Register a device (at every launch, and when its language or time zone changes)",
                   "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RegistrationInput"}}}},
                   "responses": {"200": {"description": "registered", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Registration"}}}},
                                 "400": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/registrations/{token}": {
          "parameters": [{"name": "token", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {"summary": "A registration", "responses": {"200": {"description": "found", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Registration"}}}}, "404": {"$ref": "#/components/responses/Error"}}},
          "delete": {"summary": "Forget a device", "responses": {"204": {"description": "deleted"}, "404": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/templates/{id}": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "put": {"summary": "Create or replace a message template",
                  "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TemplateInput"}}}},
                  "responses": {"200": {"description": "stored"}, "400": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/sends": {
          "post": {"summary": "Send now (idempotent with an Idempotency-Key header or idempotencyKey field)",
                   "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string"}}],
                   "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SendInput"}}}},
                   "responses": {"200": {"description": "sent (or replayed: the first send's report)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SendReport"}}}},
                                 "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/sends/{id}": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {"summary": "A send's report", "responses": {"200": {"description": "found", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SendReport"}}}}, "404": {"$ref": "#/components/responses/Error"}}}
        }
      },
      "components": {
        "responses": {"Error": {"description": "what is wrong and how to fix it", "content": {"application/json": {"schema": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}}}},
        "schemas": {
          "RegistrationInput": {"type": "object", "required": ["token", "topic", "language", "timeZone"],
            "properties": {"token": {"type": "string", "description": "device token, hex"}, "topic": {"type": "string"},
                           "language": {"type": "string", "description": "BCP 47, e.g. fr-CA"}, "timeZone": {"type": "string", "description": "IANA, e.g. Europe/Paris"},
                           "userId": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}},
          "Registration": {"allOf": [{"$ref": "#/components/schemas/RegistrationInput"}, {"type": "object", "properties": {"registeredAt": {"type": "integer", "description": "ms since 1970"}}}]},
          "Text": {"type": "object", "required": ["body"], "properties": {"title": {"type": "string"}, "subtitle": {"type": "string"}, "body": {"type": "string", "description": "%@ and %n$@ take the send's args"}}},
          "TemplateInput": {"type": "object", "required": ["translations"], "properties": {"translations": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Text"}}}},
          "SendInput": {"type": "object", "required": ["to"],
            "properties": {
              "to": {"oneOf": [
                {"type": "object", "required": ["token"], "properties": {"token": {"type": "string"}}},
                {"type": "object", "required": ["user"], "properties": {"user": {"type": "string"}}},
                {"type": "object", "required": ["segment"], "properties": {"segment": {"type": "object", "properties": {"topic": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "languages": {"type": "array", "items": {"type": "string"}}}}}}]},
              "template": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "args": {"type": "array", "items": {"type": "string"}}}},
              "alert": {"$ref": "#/components/schemas/Text"},
              "locKey": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}, "args": {"type": "array", "items": {"type": "string"}}, "titleKey": {"type": "string"}, "titleArgs": {"type": "array", "items": {"type": "string"}}}},
              "badge": {"type": "integer"}, "sound": {"type": "string"}, "contentAvailable": {"type": "boolean"}, "category": {"type": "string"},
              "threadId": {"type": "string"}, "data": {"type": "object"}, "pushType": {"type": "string"}, "priority": {"type": "integer", "enum": [10, 5, 1]},
              "expiration": {"type": "integer"}, "collapseId": {"type": "string"}, "idempotencyKey": {"type": "string"}}},
          "SendReport": {"type": "object",
            "properties": {"id": {"type": "string"}, "createdAt": {"type": "integer"}, "replayed": {"type": "boolean"},
                           "counts": {"type": "object", "additionalProperties": {"type": "integer"}, "description": "accepted, \"410 Unregistered\", no-answer, …"},
                           "pruned": {"type": "array", "items": {"type": "string"}},
                           "deliveries": {"type": "array", "items": {"type": "object", "properties": {"token": {"type": "string"}, "language": {"type": ["string", "null"]}, "status": {"type": "integer"}, "reason": {"type": ["string", "null"]}, "apnsId": {"type": ["string", "null"]}, "attempts": {"type": "integer"}}}}}}
        }
      }
    }
    """#
}
