import { api } from "../api.js";
import { href } from "../router.js";
import { shortId } from "../format.js";
import type { OpenApproval } from "../types.js";
import { ApprovalCard } from "./approval-card.js";
import { Problem, useLoad } from "./common.js";

/** Every open approval of the tenant across its runs, oldest first (GET /v1/approvals), answerable here. */
export function ApprovalsPage() {
  const approvals = useLoad(() => api<{ approvals: OpenApproval[] }>("GET", "/v1/approvals"), [], 2000);
  const list = approvals.value?.approvals ?? [];
  return (
    <section>
      <h1>Approvals</h1>
      <Problem text={approvals.error} />
      {list.length === 0 && !approvals.loading ? <p>No approval is waiting.</p> : null}
      <ol class="inbox">
        {list.map((approval) => (
          <li key={approval.pauseId}>
            <p class="crumbs">
              run{" "}
              <a href={href.run(approval.runId, approval.callId)} title={approval.runId}>
                {shortId(approval.runId)}
              </a>
            </p>
            <ApprovalCard approval={approval} onAnswered={approvals.reload} />
          </li>
        ))}
      </ol>
    </section>
  );
}
