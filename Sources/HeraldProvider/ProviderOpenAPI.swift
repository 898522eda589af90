/// The OpenAPI 3.1 description of the provider service's REST API, served at `/openapi.json`
/// and checked by the tests against the routes the server answers.
public enum ProviderOpenAPI {
    public static let document = #"""
    {
      "openapi": "3.1.0",
      "info": {"title": "Herald provider service", "version": "1.0.0",
               "description": "The app's own server: device registrations, localized sends to a token, a user or a segment, idempotency, pruning of unregistered tokens, send reports."},
      "security": [{"bearer": []}],
      "paths": {
        "/health": {"get": {"summary": "Liveness (public)", "security": [], "responses": {"200": {"description": "ok"}}}},
        "/metrics": {"get": {"summary": "Prometheus metrics: sends by origin, pushes by status and reason, scheduled runs by outcome and their lag, registrations",
                             "responses": {"200": {"description": "the text exposition format", "content": {"text/plain": {"schema": {"type": "string"}}}}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/openapi.json": {"get": {"summary": "This document (public)", "security": [], "responses": {"200": {"description": "the document"}}}},
        "/v1/registrations": {
          "get": {"summary": "List registrations in token order, filtered by topic, user, tag, language (its base matches too: fr lists fr-CA) and time zone",
                  "parameters": [{"name": "topic", "in": "query", "schema": {"type": "string"}}, {"name": "user", "in": "query", "schema": {"type": "string"}},
                                 {"name": "tag", "in": "query", "schema": {"type": "string"}}, {"name": "language", "in": "query", "schema": {"type": "string"}},
                                 {"name": "zone", "in": "query", "schema": {"type": "string"}}, {"$ref": "#/components/parameters/after"}, {"$ref": "#/components/parameters/limit"}],
                  "responses": {"200": {"description": "one page", "content": {"application/json": {"schema": {"type": "object", "required": ["items"],
                                  "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Registration"}}, "next": {"type": "string"}}}}}},
                                "400": {"$ref": "#/components/responses/Error"}}},
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
        "/v1/templates": {
          "get": {"summary": "List templates in id order",
                  "parameters": [{"$ref": "#/components/parameters/after"}, {"$ref": "#/components/parameters/limit"}],
                  "responses": {"200": {"description": "one page", "content": {"application/json": {"schema": {"type": "object", "required": ["items"],
                                  "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Template"}}, "next": {"type": "string"}}}}}},
                                "400": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/templates/{id}": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "put": {"summary": "Create or replace a message template",
                  "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TemplateInput"}}}},
                  "responses": {"200": {"description": "stored"}, "400": {"$ref": "#/components/responses/Error"}}},
          "get": {"summary": "A template with its translations and how many arguments a send must give",
                  "responses": {"200": {"description": "found", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Template"}}}}, "404": {"$ref": "#/components/responses/Error"}}},
          "delete": {"summary": "Delete a template (refused while an active schedule uses it)",
                     "responses": {"204": {"description": "deleted"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/sends": {
          "get": {"summary": "List sends, newest first (only a schedule's runs with scheduleId), without their deliveries",
                  "parameters": [{"name": "scheduleId", "in": "query", "schema": {"type": "string"}}, {"$ref": "#/components/parameters/after"}, {"$ref": "#/components/parameters/limit"}],
                  "responses": {"200": {"description": "one page", "content": {"application/json": {"schema": {"type": "object", "required": ["items"],
                                  "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/SendSummary"}}, "next": {"type": "string"}}}}}},
                                "400": {"$ref": "#/components/responses/Error"}}},
          "post": {"summary": "Send now (idempotent with an Idempotency-Key header or idempotencyKey field: the same key with the same request returns the first report; with another request 422; a send a restart interrupted 409). A target that matches no registration is 404 and sends nothing; a template given the wrong number of args is 400.",
                   "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string"}}],
                   "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SendInput"}}}},
                   "responses": {"200": {"description": "sent (or replayed: the first send's report)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SendReport"}}}},
                                 "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"},
                                 "409": {"$ref": "#/components/responses/Error"}, "422": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/sends/{id}": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {"summary": "A send's report", "responses": {"200": {"description": "found", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SendReport"}}}}, "404": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/sends/{id}/receipts": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {"summary": "The gateway's receipts for a send's accepted deliveries (Herald gateways only)",
                  "responses": {"200": {"description": "latest status per token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Receipts"}}}},
                                "404": {"$ref": "#/components/responses/Error"}, "502": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/schedules": {
          "post": {"summary": "Schedule a send: at an instant, or at a wall-clock time in one zone or in each registration's own, once or recurring",
                   "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ScheduleInput"}}}},
                   "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Schedule"}}}},
                                 "200": {"description": "the same request under an existing id: the existing schedule", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Schedule"}}}},
                                 "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}},
          "get": {"summary": "List schedules (without their runs)",
                  "parameters": [{"name": "state", "in": "query", "required": false, "schema": {"type": "string", "enum": ["active", "finished", "cancelled"]}}],
                  "responses": {"200": {"description": "the schedules", "content": {"application/json": {"schema": {"type": "object", "properties": {"schedules": {"type": "array", "items": {"$ref": "#/components/schemas/Schedule"}}}}}}},
                                "400": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/schedules/{id}": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {"summary": "A schedule with its next occurrences, runs and counts", "responses": {"200": {"description": "found", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Schedule"}}}}, "404": {"$ref": "#/components/responses/Error"}}},
          "delete": {"summary": "Cancel a schedule (its runs stay readable)", "responses": {"200": {"description": "cancelled", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Schedule"}}}}, "404": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/schedules/{id}/plan": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                         {"name": "hours", "in": "query", "required": false, "schema": {"type": "number", "default": 24}}],
          "get": {"summary": "The occurrences of the next hours in every zone, with how many registrations each would reach now",
                  "responses": {"200": {"description": "the plan", "content": {"application/json": {"schema": {"type": "object", "properties": {"runs": {"type": "array", "items": {"type": "object",
                    "properties": {"zone": {"type": "string"}, "localDate": {"type": ["string", "null"]}, "dueAt": {"type": "string", "format": "date-time"}, "recipients": {"type": "integer"}}}}}}}}},
                                "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/schedules/{id}/receipts": {
          "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {"summary": "The gateway's receipts over every run of a schedule (Herald gateways only)",
                  "responses": {"200": {"description": "latest status per token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Receipts"}}}},
                                "404": {"$ref": "#/components/responses/Error"}, "502": {"$ref": "#/components/responses/Error"}}}
        },
        "/v1/feedback/poll": {
          "post": {"summary": "Read (and clear) the gateway's feedback list of every registered topic now, pruning the tokens it names unless registered again after",
                   "responses": {"200": {"description": "what was read and pruned", "content": {"application/json": {"schema": {"type": "object",
                     "properties": {"read": {"type": "integer"}, "pruned": {"type": "array", "items": {"type": "string"}}, "errors": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}}}
        }
      },
      "components": {
        "parameters": {
          "after": {"name": "after", "in": "query", "required": false, "schema": {"type": "string"}, "description": "the previous page's next"},
          "limit": {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}
        },
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "The token in the provider's api-token file (DIR/api-token, or --api-token-file). Missing or wrong: 401. Bodies over 1 MiB: 413."}},
        "responses": {"Error": {"description": "what is wrong and how to fix it", "content": {"application/json": {"schema": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}}}},
        "schemas": {
          "RegistrationInput": {"type": "object", "required": ["token", "topic", "language", "timeZone"],
            "properties": {"token": {"type": "string", "description": "device token, hex"}, "topic": {"type": "string"},
                           "language": {"type": "string", "description": "BCP 47, e.g. fr-CA"}, "timeZone": {"type": "string", "description": "IANA, e.g. Europe/Paris"},
                           "userId": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}},
          "Registration": {"allOf": [{"$ref": "#/components/schemas/RegistrationInput"}, {"type": "object", "properties": {"registeredAt": {"type": "integer", "description": "ms since 1970"}}}]},
          "Text": {"type": "object", "required": ["body"], "properties": {"title": {"type": "string"}, "subtitle": {"type": "string"}, "body": {"type": "string", "description": "%@ and %n$@ take the send's args"}}},
          "Template": {"type": "object", "properties": {"id": {"type": "string"}, "arguments": {"type": "integer", "description": "how many args a send must give"},
                                                         "translations": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Text"}}}},
          "SendSummary": {"type": "object", "properties": {"id": {"type": "string"}, "createdAt": {"type": "integer"},
                            "state": {"type": "string", "enum": ["started", "done", "interrupted"]},
                            "counts": {"type": "object", "additionalProperties": {"type": "integer"}}, "scheduleId": {"type": ["string", "null"]}}},
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
          "Timing": {"type": "object", "description": "at: an ISO 8601 instant with its offset; or time HH:MM in timeZone (absent: each registration's own zone), repeat once|daily|weekly|monthly, weekdays (weekly), day (monthly), from and until (local dates, inclusive)",
            "properties": {"at": {"type": "string", "format": "date-time"}, "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}, "timeZone": {"type": ["string", "null"]},
                           "repeat": {"type": "string", "enum": ["once", "daily", "weekly", "monthly"]}, "weekdays": {"type": "array", "items": {"type": "string", "enum": ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}},
                           "day": {"type": "integer", "minimum": 1, "maximum": 31}, "from": {"type": ["string", "null"], "format": "date"}, "until": {"type": ["string", "null"], "format": "date"}}},
          "ScheduleInput": {"allOf": [{"$ref": "#/components/schemas/SendInput"}, {"$ref": "#/components/schemas/Timing"}, {"type": "object", "properties": {"id": {"type": "string", "description": "your id: creating it again with the same request returns it"}}}]},
          "Schedule": {"type": "object",
            "properties": {"id": {"type": "string"}, "state": {"type": "string", "enum": ["active", "finished", "cancelled"]}, "createdAt": {"type": "string", "format": "date-time"},
                           "timing": {"$ref": "#/components/schemas/Timing"}, "send": {"type": "object"},
                           "next": {"type": "object", "additionalProperties": {"type": "string", "format": "date-time"}, "description": "next occurrence per zone"},
                           "counts": {"type": "object", "additionalProperties": {"type": "integer"}}, "runCount": {"type": "integer"},
                           "runs": {"type": "array", "items": {"type": "object", "properties": {"zone": {"type": "string"}, "localDate": {"type": ["string", "null"]}, "dueAt": {"type": "string"},
                             "startedAt": {"type": "integer"}, "finishedAt": {"type": "integer"}, "outcome": {"type": "string", "enum": ["sent", "missed", "started", "interrupted"]}, "sendId": {"type": ["string", "null"]},
                             "counts": {"type": "object", "additionalProperties": {"type": "integer"}}, "error": {"type": ["string", "null"]}}}}}},
          "Receipts": {"type": "object", "properties": {"counts": {"type": "object", "additionalProperties": {"type": "integer"}}, "tokens": {"type": "object", "additionalProperties": {"type": "string"}}}},
          "SendReport": {"type": "object",
            "properties": {"id": {"type": "string"}, "createdAt": {"type": "integer"}, "replayed": {"type": "boolean"},
                           "counts": {"type": "object", "additionalProperties": {"type": "integer"}, "description": "accepted, \"410 Unregistered\", no-answer, …"},
                           "pruned": {"type": "array", "items": {"type": "string"}}, "scheduleId": {"type": ["string", "null"]},
                           "deliveries": {"type": "array", "items": {"type": "object", "properties": {"token": {"type": "string"}, "language": {"type": ["string", "null"]}, "status": {"type": "integer"}, "reason": {"type": ["string", "null"]}, "apnsId": {"type": ["string", "null"]}, "attempts": {"type": "integer"},
                             "error": {"type": ["string", "null"], "description": "no answer: the transport's error (status 0); or what failed after the answer"}}}}}}
        }
      }
    }
    """#
}
