// Drives a running `vigil mcp` with the official MCP TypeScript client for cases (API.md §14)
// (cmd/vigil/mcp_cases_tsclient_test.go runs it). Input: VIGIL_MCP_URL (…/mcp), VIGIL_KEY (alerts:read and
// alerts:write), VIGIL_READ_KEY (alerts:read only), VIGIL_ALERTS (three alert uuids, comma-separated),
// VIGIL_TITLE (a hostile title). Output: one JSON object on stdout describing what the client saw; the
// Go test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.VIGIL_MCP_URL);
const alerts = process.env.VIGIL_ALERTS.split(",");

async function connect(bearer) {
  const client = new Client({ name: "vigil-tsclient-cases", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  }));
  return client;
}
const result = (r) => ({ isError: r.isError ?? false, structured: r.structuredContent });
const caseTools = ["search_cases", "get_case", "create_case", "add_alerts_to_case", "update_case"];

const out = {};
const writer = await connect(process.env.VIGIL_KEY);
out.tools = (await writer.listTools()).tools
  .filter((t) => caseTools.includes(t.name))
  .map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? false, schema: t.inputSchema }));
out.create = result(await writer.callTool({ name: "create_case",
  arguments: { title: process.env.VIGIL_TITLE, description: process.env.VIGIL_TITLE, alert_uuids: alerts } }));
const caseUUID = out.create.structured?.data?.uuid;
out.second = result(await writer.callTool({ name: "create_case", arguments: { title: "second incident" } }));
const secondUUID = out.second.structured?.data?.uuid;
out.moveRefused = result(await writer.callTool({ name: "add_alerts_to_case",
  arguments: { case_uuid: secondUUID, alert_uuids: [alerts[2]] } }));
out.moved = result(await writer.callTool({ name: "add_alerts_to_case",
  arguments: { case_uuid: secondUUID, alert_uuids: [alerts[2]], move: true } }));
out.investigate = result(await writer.callTool({ name: "update_case", arguments: { case_uuid: caseUUID, status: "Investigating" } }));
out.close = result(await writer.callTool({ name: "update_case", arguments: { case_uuid: caseUUID, status: "Closed",
  close_classification: "True Positive - Suspicious Activity", close_alerts: true } }));
out.wrongType = result(await writer.callTool({ name: "create_case", arguments: { title: 42 } }));
out.empty = result(await writer.callTool({ name: "create_case", arguments: { title: "" } }));
out.nul = result(await writer.callTool({ name: "create_case", arguments: { title: "a\u0000b" } }));
out.oversized = result(await writer.callTool({ name: "create_case", arguments: { title: "x".repeat(501) } }));
out.extra = result(await writer.callTool({ name: "create_case", arguments: { title: "x", status: "Closed" } }));
out.badUUID = result(await writer.callTool({ name: "add_alerts_to_case", arguments: { case_uuid: secondUUID, alert_uuids: ["nope"] } }));
out.badMove = result(await writer.callTool({ name: "update_case",
  arguments: { case_uuid: secondUUID, status: "Closed", close_classification: "Duplicate" } }));
await writer.close();

const reader = await connect(process.env.VIGIL_READ_KEY);
out.search = result(await reader.callTool({ name: "search_cases", arguments: { status: ["Closed"] } }));
out.get = result(await reader.callTool({ name: "get_case", arguments: { case_uuid: caseUUID } }));
const res = await reader.readResource({ uri: `vigil://cases/${caseUUID}` });
out.resource = JSON.parse(res.contents[0].text);
out.readOnlyCreate = result(await reader.callTool({ name: "create_case", arguments: { title: "x" } }));
out.readOnlyUpdate = result(await reader.callTool({ name: "update_case", arguments: { case_uuid: caseUUID, title: "x" } }));
out.readOnlyAdd = result(await reader.callTool({ name: "add_alerts_to_case", arguments: { case_uuid: caseUUID, alert_uuids: [alerts[0]] } }));
await reader.close();

process.stdout.write(JSON.stringify(out));
