import { describeError } from './lock-node.js';
/**
 * Sends one request to every node at once and decides as soon as a majority said yes or a
 * majority can no longer be reached, without waiting for stragglers. Nodes that have not answered
 * within `timeoutMs` count as unavailable (one timer per round, not one per node).
 * `classify` may return a failure reason instead of a vote (e.g. an abstaining node).
 */
export function quorumRound(nodes, quorum, timeoutMs, send, classify) {
    return new Promise((resolve) => {
        const total = nodes.length;
        const votes = new Array(total);
        const yes = [];
        const no = [];
        const unavailable = [];
        let decided = false;
        const decide = () => {
            if (decided)
                return;
            const failed = no.length + unavailable.length;
            if (yes.length >= quorum || failed > total - quorum || yes.length + failed === total) {
                decided = true;
                clearTimeout(timer);
                resolve({ ok: yes.length >= quorum, yes, no, unavailable, votes });
            }
        };
        const record = (index, outcome) => {
            if (votes[index] !== undefined || decided)
                return;
            outcome();
            decide();
        };
        const timer = setTimeout(() => {
            for (let i = 0; i < total; i++) {
                record(i, () => {
                    votes[i] = 'failed';
                    unavailable.push({ node: nodes[i].label, reason: `no reply within ${timeoutMs} ms` });
                });
            }
        }, timeoutMs);
        nodes.forEach((node, index) => {
            send(node).then((reply) => record(index, () => {
                const vote = classify(reply, node);
                if (vote === 'yes') {
                    votes[index] = 'yes';
                    yes.push({ index, reply });
                }
                else if (vote === 'no') {
                    votes[index] = 'no';
                    no.push(reply);
                }
                else {
                    votes[index] = 'declined';
                    unavailable.push({ node: node.label, reason: vote === 'unavailable' ? 'unavailable' : vote.unavailable });
                }
            }), (err) => record(index, () => {
                votes[index] = 'failed';
                unavailable.push({ node: node.label, reason: describeError(err) });
            }));
        });
    });
}
//# sourceMappingURL=quorum-round.js.map