// Drives a running `vigil mcp` with the official MCP TypeScript client for comments and the timeline
// (cmd/vigil/mcp_comments_tsclient_test.go runs it). Input: VIGIL_MCP_URL (…/mcp), VIGIL_KEY (alerts:read
// and alerts:write), VIGIL_READ_KEY (alerts:read only), VIGIL_ALERT_UUID, VIGIL_BODY (a hostile comment).
// Output: one JSON object on stdout describing what the client saw; the Go test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.VIGIL_MCP_URL);
const alertUUID = process.env.VIGIL_ALERT_UUID;

async function connect(bearer) {
  const client = new Client({ name: "vigil-tsclient-comments", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  }));
  return client;
}
const result = (r) => ({ isError: r.isError ?? false, structured: r.structuredContent });

const out = {};
const writer = await connect(process.env.VIGIL_KEY);
out.tools = (await writer.listTools()).tools
  .filter((t) => ["post_alert_comment", "list_alert_comments", "get_alert_timeline"].includes(t.name))
  .map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? false, schema: t.inputSchema }));
out.post = result(await writer.callTool({ name: "post_alert_comment",
  arguments: { alert_uuid: alertUUID, body: process.env.VIGIL_BODY } }));
out.wrongType = result(await writer.callTool({ name: "post_alert_comment", arguments: { alert_uuid: alertUUID, body: 42 } }));
out.empty = result(await writer.callTool({ name: "post_alert_comment", arguments: { alert_uuid: alertUUID, body: "" } }));
out.nul = result(await writer.callTool({ name: "post_alert_comment", arguments: { alert_uuid: alertUUID, body: "a\u0000b" } }));
out.oversized = result(await writer.callTool({ name: "post_alert_comment",
  arguments: { alert_uuid: alertUUID, body: "x".repeat(20001) } }));
out.extra = result(await writer.callTool({ name: "post_alert_comment",
  arguments: { alert_uuid: alertUUID, body: "x", author: "someone else" } }));
out.badUUID = result(await writer.callTool({ name: "post_alert_comment", arguments: { alert_uuid: "nope", body: "x" } }));
await writer.close();

const reader = await connect(process.env.VIGIL_READ_KEY);
out.readOnlyPost = result(await reader.callTool({ name: "post_alert_comment", arguments: { alert_uuid: alertUUID, body: "x" } }));
out.list = result(await reader.callTool({ name: "list_alert_comments", arguments: { alert_uuid: alertUUID } }));
out.timeline = result(await reader.callTool({ name: "get_alert_timeline", arguments: { alert_uuid: alertUUID, page_size: 500 } }));
await reader.close();

process.stdout.write(JSON.stringify(out));
