// Keeps the hidden classes ("maps") of process.nextTick's queue entries alive
// for the life of the process, so that every nextTick stays on V8's fast path.
//
// Node 20's nextTick builds each entry as an object literal whose first two
// keys are computed (`{ [async_id_symbol]: …, [trigger_async_id_symbol]: …,
// callback, args }`). V8 defines such keys through feedback that has no
// polymorphic state: the first map it sees other than the one it recorded
// turns it megamorphic for good, and from then on each nextTick defines its
// properties in the runtime instead of in compiled code. V8 holds those maps
// only weakly (from the transitions and from that feedback) and keeps a map
// it has used alive for two more full collections (--retain-maps-for-n-gc=2),
// so a memory-reducing collection (several full ones in a row) while no entry
// is queued frees them, and the next nextTick makes new ones, which the
// feedback takes for a second map. In `hr-relay start` the settling
// collection a second after the start (settleHeap in cli.ts) did this every
// time; otherwise V8's memory reducer does it after an idle spell, on a box
// at night. Every socket write, stream end and HTTP answer calls nextTick a
// few times: the runtime path was 7.7 % of the service's samples under the
// latest-http load (none of bare Fastify's, which did not collect at idle in
// the bench), and keeping one entry alive took 8-19 % off its CPU per answer
// (bench/README.md, "What changed"). Holding one entry keeps its map and,
// through each map's back pointer to the one before it, the whole chain:
// later entries get the same maps and the feedback stays monomorphic.
//
// In a nextTick callback, async_hooks' executionAsyncResource() is that
// callback's queue entry (Node 20). Should a Node change that, this holds
// some other object and only the speed is lost (test/relay/tick-maps.test.ts
// checks it on the Node that runs the tests).
import { executionAsyncResource } from 'node:async_hooks'

/** Settled with the entry, this module-level promise is what holds it. */
let keeping: Promise<object> | undefined

/** Holds one of process.nextTick's queue entries for the life of the process (once); resolves to it. */
export function keepTickObjectMaps (): Promise<object> {
  keeping ??= new Promise(resolve => {
    process.nextTick(() => { resolve(executionAsyncResource()) })
  })
  return keeping
}
