import HeraldDashboard
import HTTPTypes
import Hummingbird

/// How every HTTP/1 surface answers with a page, an asset or a line of text: the same security
/// headers on all of them (``DashboardAssets/securityHeaders``), assets from one place.
public enum WebResponse {
    /// `body` as `type` (HTML by default) with the security headers.
    public static func page(_ status: HTTPResponse.Status, _ body: String, type: String = "text/html; charset=utf-8") -> Response {
        var headers: HTTPFields = [.contentType: type]
        for (name, value) in DashboardAssets.securityHeaders { if let field = HTTPField.Name(name) { headers[field] = value } }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// Plain text (a line, newline added) with the security headers.
    public static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        page(status, text + "\n", type: "text/plain; charset=utf-8")
    }

    /// Plain text without security headers, exactly as given (the admin port's API answers).
    public static func plain(_ status: HTTPResponse.Status, _ text: String, type: String = "text/plain") -> Response {
        Response(status: status, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// JSON text as given.
    public static func json(_ status: HTTPResponse.Status, _ json: String) -> Response {
        plain(status, json, type: "application/json")
    }

    /// `303 See Other` to `location`.
    public static func redirect(_ location: String, body: String? = nil) -> Response {
        Response(status: .seeOther, headers: [.location: location, .contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: body ?? "see \(location)\n")))
    }

    /// `GET /assets/<name>`: the dashboards' stylesheet, scripts and icon, or 404; and
    /// `GET /favicon.ico` (the icon, where a browser looks first).
    public static func registerAssets<Context: RequestContext>(on router: Router<Context>) {
        router.get("favicon.ico") { _, _ in
            let icon = DashboardAssets.asset(named: "favicon.svg")!
            return page(.ok, icon.body, type: icon.contentType)
        }
        router.get("assets/:name") { _, context in
            guard let name = context.parameters.get("name"), let asset = DashboardAssets.asset(named: name) else {
                return text(.notFound, "no such asset")
            }
            return page(.ok, asset.body, type: asset.contentType)
        }
    }
}
