// Drives a running `vigil mcp` with the official MCP TypeScript client (cmd/vigil/mcp_tsclient_test.go
// runs it). Input: VIGIL_MCP_URL (…/mcp), VIGIL_KEY, VIGIL_ALERT_UUID, VIGIL_ALERT_TITLE,
// VIGIL_WORKFLOW_UUID (an active agent_only workflow), VIGIL_API_URL, VIGIL_ADMIN_KEY, VIGIL_REVOKE_KEY and
// VIGIL_REVOKE_KEY_UUID (a key the client revokes over REST, then uses again).
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

// The write tools: a finding, status moves through the transition rules, an agent's gated run.
const result = (r) => ({ isError: r.isError ?? false, structured: r.structuredContent });
out.finding = result(await client.callTool({ name: "post_alert_finding", arguments: {
  alert_uuid: alertUUID, agent_name: "ts-client", summary: "Seen by the TypeScript client.", confidence: "medium",
  evidence: { source: "mcp" } } }));
// Ownership and the pivot filters (issue 29): assign, then find the alert by assignee, an indicator
// written differently from how it was added, its computed malice and text of its description.
out.assign = result(await client.callTool({ name: "assign_alert",
  arguments: { alert_uuid: alertUUID, assignee: "maria.ortiz" } }));
out.assignOversized = result(await client.callTool({ name: "assign_alert",
  arguments: { alert_uuid: alertUUID, assignee: "x".repeat(201) } }));
out.assignWrongType = result(await client.callTool({ name: "assign_alert",
  arguments: { alert_uuid: alertUUID, assignee: 42 } }));
out.assignHostile = result(await client.callTool({ name: "assign_alert",
  arguments: { alert_uuid: alertUUID, assignee: "none" } }));
out.addIndicator = result(await client.callTool({ name: "add_alert_indicators",
  arguments: { alert_uuid: alertUUID, indicators: [{ value: "c2.lockbit-ts.example" }], enrich: false } }));
out.searchPivot = result(await client.callTool({ name: "search_alerts", arguments: {
  assignee: ["maria.ortiz"], indicator: " C2.LockBit-TS.example ", malice: ["Pending"], q: "previous instructions" } }));
out.searchUnassigned = result(await client.callTool({ name: "search_alerts", arguments: { assignee: "none", q: title } }));
out.searchBadFilters = result(await client.callTool({ name: "search_alerts", arguments: {
  indicator: "a\u0000b", malice: ["Evil"], close_classification: ["Nope"], indicator_type: "bogus" } }));
out.closeWithoutClassification = result(await client.callTool({ name: "update_alert_status",
  arguments: { alert_uuid: alertUUID, status: "Closed" } }));
out.close = result(await client.callTool({ name: "update_alert_status",
  arguments: { alert_uuid: alertUUID, status: "Closed", close_classification: "Duplicate" } }));
out.illegalMove = result(await client.callTool({ name: "update_alert_status",
  arguments: { alert_uuid: alertUUID, status: "Escalated" } }));
const run = { workflow_uuid: process.env.VIGIL_WORKFLOW_UUID, indicator_type: "ip", indicator_value: "198.51.100.9" };
out.executeWithoutReason = result(await client.callTool({ name: "execute_workflow", arguments: run }));
out.execute = result(await client.callTool({ name: "execute_workflow",
  arguments: { ...run, reason: "beaconing to a known C2", confidence: 0.8 } }));
await client.close();

// A key revoked over REST is refused on its next MCP request (after the authenticator's 2 s cache).
const revocable = await connect(process.env.VIGIL_REVOKE_KEY);
out.beforeRevoke = result(await revocable.callTool({ name: "search_alerts", arguments: { page_size: 1 } }));
// That key is read-only: it cannot assign.
out.readOnlyAssign = result(await revocable.callTool({ name: "assign_alert",
  arguments: { alert_uuid: alertUUID, assignee: "mallory" } }));
const del = await fetch(`${process.env.VIGIL_API_URL}/v1/api-keys/${process.env.VIGIL_REVOKE_KEY_UUID}`, {
  method: "DELETE", headers: { Authorization: `Bearer ${process.env.VIGIL_ADMIN_KEY}` } });
out.revokeStatus = del.status;
await new Promise((r) => setTimeout(r, 2500));
try {
  await revocable.callTool({ name: "search_alerts", arguments: { page_size: 1 } });
  out.afterRevoke = { refused: false };
} catch (err) {
  out.afterRevoke = { refused: true, code: err.code ?? null, message: String(err.message ?? err) };
}
await revocable.close().catch(() => {});

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
