// Starts Swagger UI on the document this server generates (./openapi.json,
// relative to the page, so it works under any server.prefix and
// swagger.path). No online validator: the page never leaves the server.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    displayRequestDuration: true,
    showExtensions: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
