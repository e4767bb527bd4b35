import { describe, expect, it } from "vitest";
import { checkEgressSecrets, headerValue, redactSecrets, secretHeaders } from "../../src/capabilities/egress-secrets.js";
import { parseEgress } from "../../src/capabilities/egress.js";
import { thrownHookboxError } from "../helpers/thrown.js";

/*
 * The values of an egress entry's secret headers (src/capabilities/egress-secrets.ts) in the test's own process:
 * what is sent for each raw value, which values are refused at start (CONFIG) and at a request
 * (CAPABILITY_FAILED), always by the entry and the variable and never by the value, and the redaction of what
 * was sent. The same through the CLI, serve and a sandboxed script: egress-secrets.test.ts.
 */

const SECRET = "sk-live-7f3a9c2e51d04b8a";
const rules = parseEgress(
  [
    "https://public.example.com/",
    {
      url: "https://guard.example.com/v1/",
      headers: { Authorization: { env: "GUARD_KEY", prefix: "Bearer " }, "x-tenant": { env: "GUARD_TENANT" } },
    },
  ],
  "egress",
);
const guard = rules[1]!;

describe("headerValue", () => {
  it.each([
    [`${SECRET}\n`, SECRET],
    [`${SECRET}\r\n`, SECRET],
    [`\t ${SECRET} \r\n`, SECRET],
    [`\n\n${SECRET}`, SECRET],
    [`${SECRET} \t`, SECRET],
    ["a b\tc", "a b\tc"],
    ["caf\u00e9\u0080\u00ff", "caf\u00e9\u0080\u00ff"],
    ["~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", "~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"],
  ])("sends %j as %j (the whitespace around it dropped)", (raw, secret) => {
    expect(headerValue({ env: "K" }, raw)).toEqual({ sent: secret, secret });
  });

  it("the prefix goes before the value, and the whitespace around the whole is dropped too", () => {
    expect(headerValue({ env: "K", prefix: "Bearer " }, ` ${SECRET}\n`)).toEqual({ sent: `Bearer ${SECRET}`, secret: SECRET });
    expect(headerValue({ env: "K", prefix: "  Token  " }, SECRET)).toEqual({ sent: `Token  ${SECRET}`, secret: SECRET });
  });

  it.each([
    ["", "it is only whitespace"],
    [" \r\n\t", "it is only whitespace"],
    [`${SECRET}\nX-Injected: yes`, "it contains a line break"],
    [`${SECRET}\rX`, "it contains a line break"],
    [`${SECRET}\u0000x`, "it contains a control character or one outside Latin-1, which a header cannot carry"],
    [`${SECRET}\u001fx`, "it contains a control character or one outside Latin-1, which a header cannot carry"],
    [`${SECRET}\u007fx`, "it contains a control character or one outside Latin-1, which a header cannot carry"],
    [`${SECRET}\u0100`, "it contains a control character or one outside Latin-1, which a header cannot carry"],
    [`${SECRET}€`, "it contains a control character or one outside Latin-1, which a header cannot carry"],
  ])("refuses %j: %s", (raw, problem) => {
    expect(headerValue({ env: "K" }, raw)).toEqual({ problem });
  });

  it("a prefix with a line break or a control character is refused like a value with one", () => {
    expect(headerValue({ env: "K", prefix: "Bearer\n" }, SECRET)).toEqual({ problem: "it contains a line break" });
    expect(headerValue({ env: "K", prefix: "\u0001" }, SECRET)).toMatchObject({ problem: expect.stringContaining("control character") });
  });
});

describe("checkEgressSecrets (at start)", () => {
  it("passes usable values and skips variables that are unset or empty (their requests fail instead)", () => {
    expect(() => checkEgressSecrets(rules, { GUARD_KEY: `${SECRET}\n`, GUARD_TENANT: "acme" }, "egress")).not.toThrow();
    expect(() => checkEgressSecrets(rules, {}, "egress")).not.toThrow();
    expect(() => checkEgressSecrets(rules, { GUARD_KEY: "", GUARD_TENANT: "" }, "egress")).not.toThrow();
  });

  it("an unusable value is a CONFIG error naming the entry's place, the header and the variable, never the value", () => {
    const error = thrownHookboxError(() =>
      checkEgressSecrets(rules, { GUARD_KEY: SECRET, GUARD_TENANT: `${SECRET}\nX-Injected: yes` }, "tenant acme: egress"),
    );
    expect(error).toMatchObject({
      code: "CONFIG",
      message:
        'tenant acme: egress[1]: the egress entry https://guard.example.com/v1/ adds header "x-tenant" from environment variable GUARD_TENANT, whose value cannot be sent: it contains a line break',
      details: { field: "tenant acme: egress[1].headers.x-tenant", variable: "GUARD_TENANT" },
    });
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(SECRET);
  });
});

describe("secretHeaders (at a request)", () => {
  it("gives the headers as sent and records each secret for redaction, in the entry's order", () => {
    const secrets: string[] = [];
    expect(secretHeaders(guard, { GUARD_KEY: ` ${SECRET}\r\n`, GUARD_TENANT: "acme\n" }, secrets)).toEqual([
      ["authorization", `Bearer ${SECRET}`],
      ["x-tenant", "acme"],
    ]);
    expect(secrets).toEqual([SECRET, "acme"]);
    expect(secretHeaders(rules[0]!, {}, secrets)).toEqual([]);
  });

  it.each([
    [{ GUARD_TENANT: "acme" }, "which is not set on the host"],
    [{ GUARD_KEY: "", GUARD_TENANT: "acme" }, "which is not set on the host"],
    [{ GUARD_KEY: `${SECRET}\u0007`, GUARD_TENANT: "acme" }, "whose value cannot be sent: it contains a control character"],
  ])("%j: CAPABILITY_FAILED naming the entry and the variable, never the value", (env, why) => {
    const secrets: string[] = [];
    const error = thrownHookboxError(() => secretHeaders(guard, env, secrets));
    expect(error.code).toBe("CAPABILITY_FAILED");
    expect(error.message).toContain(
      `ctx.fetch: the egress entry https://guard.example.com/v1/ adds header "authorization" from environment variable GUARD_KEY, ${why}`,
    );
    expect(error.message).not.toContain(SECRET);
    expect(secrets).toEqual([]);
  });
});

describe("redactSecrets", () => {
  it("replaces every occurrence of every secret", () => {
    expect(redactSecrets(`a ${SECRET} b ${SECRET} c acme`, [SECRET, "acme"], "[r]")).toBe("a [r] b [r] c [r]");
    expect(redactSecrets("nothing here", [SECRET], "[r]")).toBe("nothing here");
    expect(redactSecrets("text", [], "[r]")).toBe("text");
  });

  it("replaces the longest secret first, so one inside another leaves nothing of the longer one", () => {
    const long = `${SECRET}-suffix`;
    expect(redactSecrets(`x ${long} y`, [SECRET, long], "[r]")).toBe("x [r] y");
    expect(redactSecrets(`x ${long} y`, [long, SECRET], "[r]")).toBe("x [r] y");
    const given = [SECRET, long];
    redactSecrets(long, given, "[r]");
    expect(given).toEqual([SECRET, long]);
  });
});
