// Drives a running `vigil mcp` with the official MCP TypeScript client (cmd/vigil/mcp_tsclient_test.go
// runs it). Input: VIGIL_MCP_URL (…/mcp), VIGIL_KEY, VIGIL_ALERT_UUID, VIGIL_ALERT_TITLE.
// Output: one JSON object on stdout describing what the client saw; the Go test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";

const url = new URL(process.env.VIGIL_MCP_URL);
const key = process.env.VIGIL_KEY;
const alertUUID = process.env.VIGIL_ALERT_UUID;
const title = process.env.VIGIL_ALERT_TITLE;

function connect(bearer) {
  const client = new Client({ name: "vigil-tsclient-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  return client.connect(transport).then(() => client);
}

const out = {};
const client = await connect(key);
out.serverName = client.getServerVersion()?.name;
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.resources = (await client.listResources()).resources.map((r) => r.uri).sort();
out.resourceTemplates = (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate).sort();

const read = await client.readResource({ uri: `vigil://alerts/${alertUUID}` });
out.alertResource = { mimeType: read.contents[0].mimeType, body: JSON.parse(read.contents[0].text) };

const search = await client.callTool({ name: "search_alerts", arguments: { q: title, page_size: 5 } });
out.search = { isError: search.isError ?? false, structured: search.structuredContent, text: search.content[0].text };

const bad = await client.callTool({ name: "get_alert", arguments: { alert_uuid: "nope", extra: 1 } });
out.badArguments = { isError: bad.isError ?? false, structured: bad.structuredContent };
await client.close();

// The older HTTP+SSE transport at /sse, same key.
const sseClient = new Client({ name: "vigil-tsclient-test-sse", version: "1.0.0" });
await sseClient.connect(new SSEClientTransport(new URL("/sse", url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
}));
const sseSearch = await sseClient.callTool({ name: "search_alerts", arguments: { q: title } });
out.sseSearch = { isError: sseSearch.isError ?? false, structured: sseSearch.structuredContent };
await sseClient.close();

try {
  await connect("cai_" + "x".repeat(32));
  out.badKey = { connected: true };
} catch (err) {
  out.badKey = { connected: false, code: err.code ?? null, message: String(err.message ?? err) };
}

process.stdout.write(JSON.stringify(out));
