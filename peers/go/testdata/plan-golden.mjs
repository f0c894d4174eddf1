// Writes plan-golden.txt (TestPlanQueueMatchesTypeScript) from the TypeScript planner: node testdata/plan-golden.mjs > testdata/plan-golden.txt (after npx tsc -p tsconfig.build.json).
import { planQueue } from '../../../dist/src/queue/flow.plan.js';
const id = (n) => 'job' + String(n).padStart(11, '0');
const tree = { q: 'a', id: id(1), p: '{"root":true,"s":"<&>"}', pol: 'fail', key: '0', kids: [
  { q: 'a', id: id(2), p: '1', a: 5, b: 'e:100', pol: 'ignore', key: 'k1', kids: [
    { q: 'b', id: id(3), p: '"x y"', pol: 'continue', key: 'deep', kids: [ { q: 'b', id: id(4), p: 'null', pol: 'fail', key: '0', kids: [] }, { q: 'c', id: id(5), p: '{}', pol: 'fail', key: '1', kids: [] } ] } ] },
  { q: 'c', id: id(6), p: '[1,2]', b: 'f:0', pol: 'fail', key: 'k2', kids: [] },
  { q: 'a', id: id(7), p: '"\u2028é"', pol: 'fail', key: 'k3', kids: [] },
]};
console.log(JSON.stringify(planQueue('a', [{ tree, up: '' }])));
console.log(JSON.stringify(planQueue('b', [{ tree: tree.kids[0].kids[0], up: 'a ' + id(2) }])));
