// The pure rules of class mode on the display (issue 43): the split of a
// room's members over several screens (part=<i>of<n>), the effort order, the
// clock texts and the results rows.
import t from 'tap'
import { parsePart, partMembers } from '../../../api/web/static/room-layout.js'
import { compareMembers, ORDERS } from '../../../api/web/static/zones.js'
import { classTimes, clock, pointsText, resultRows } from '../../../api/web/static/class-view.js'
import type { ClassMemberView, ClassView } from '../../../api/classes/types.ts'

t.test('part=<i>of<n>: parsed strictly', async t => {
  t.equal(parsePart(undefined), null)
  t.equal(parsePart(''), null)
  t.same(parsePart('1of2'), { index: 1, count: 2 })
  t.same(parsePart('2of2'), { index: 2, count: 2 })
  t.same(parsePart('8of8'), { index: 8, count: 8 })
  for (const bad of ['3of2', '0of2', '1of0', '1of9', '9of9', 'one', '1 of 2', '1of2 ', '01of2', '-1of2', '1/2', '1of22']) t.equal(parsePart(bad), 'bad', bad)
})

t.test('partMembers: every member on exactly one screen, evenly, in a stable order', async t => {
  const members = Array.from({ length: 41 }, (_, i) => ({ profile_id: `p${String(i).padStart(2, '0')}`, display_name: `Member ${String(40 - i).padStart(2, '0')}`, bpm: 100 + ((i * 37) % 80) }))
  for (const count of [1, 2, 3, 8]) {
    const screens = Array.from({ length: count }, (_, i) => partMembers(members, { index: i + 1, count }))
    const all = screens.flat().map(m => m.profile_id).sort()
    t.same(all, members.map(m => m.profile_id).sort(), `${count} screens: each member once`)
    const sizes = screens.map(s => s.length)
    t.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${count} screens: sizes ${sizes.join('/')} differ by at most one`)
  }
  const first = partMembers(members, { index: 1, count: 2 })
  t.same(first.length, 20)
  t.same(first[0]?.display_name, 'Member 00', 'by name')
  // The same split whatever order the members come in or their heart rate.
  const shuffled = [...members].sort((a, b) => a.bpm - b.bpm)
  t.same(partMembers(shuffled, { index: 1, count: 2 }).map(m => m.profile_id), first.map(m => m.profile_id))
  // Equal names: by profile id.
  const twins = [{ profile_id: 'b', display_name: 'Sam' }, { profile_id: 'a', display_name: 'sam' }]
  t.same(partMembers(twins, { index: 1, count: 2 }).map(m => m.profile_id), ['a'])
  t.same(partMembers(twins, null), twins, 'no part: every member')
  t.same(partMembers([], { index: 2, count: 2 }), [])
})

t.test('order=effort: most points first, then by name', async t => {
  t.ok((ORDERS as string[]).includes('effort'))
  const rows = [
    { name: 'Cy', bpm: 150, percent: 80, zone: 4, effort: 3 },
    { name: 'Al', bpm: null, percent: 0, zone: 0, effort: 7 },
    { name: 'Bo', bpm: 170, percent: 90, zone: 5, effort: 7 },
    { name: 'Di', bpm: 120, percent: 60, zone: 2 }
  ]
  t.same([...rows].sort((a, b) => compareMembers('effort', a, b)).map(r => r.name), ['Al', 'Bo', 'Cy', 'Di'])
})

t.test('clock texts of a class', async t => {
  t.equal(clock(0), '0:00')
  t.equal(clock(59_999), '0:59')
  t.equal(clock(61_000), '1:01')
  t.equal(clock(45 * 60_000), '45:00')
  t.equal(clock(3_723_000), '1:02:03')
  t.equal(clock(-5000), '0:00')
  const view: ClassView = { class_id: 'c', room_id: 'r', name: 'Spin', started_at: 1_000_000, planned_end: 1_000_000 + 45 * 60_000, ended_at: null, state: 'running', results_until: null, members: [] }
  t.same(classTimes(view, 1_000_000 + 125_000), { elapsed: '2:05 elapsed', remaining: '42:55 left' })
  t.same(classTimes(view, 1_000_000 + 50 * 60_000), { elapsed: '45:00 elapsed', remaining: '0:00 left' }, 'stops at the planned end')
  t.same(classTimes({ ...view, ended_at: 1_000_000 + 600_000, state: 'results' }, 1_000_000 + 900_000), { elapsed: '10:00 in all', remaining: 'ended' })
  t.equal(pointsText(1), '1 point')
  t.equal(pointsText(0), '0 points')
})

t.test('results rows: ranked among the shown members, equal points share a rank, cut by part', async t => {
  const m = (id: string, points: number, hidden = false): ClassMemberView => ({ profile_id: id, display_name: id.toUpperCase(), effort_points: points, zone_minutes: [0, 0, 0, 0, 0], max_heart_rate: 190, alert: false, hidden })
  const members = [m('a', 20), m('b', 15, true), m('c', 15), m('d', 15), m('e', 4), m('f', 0)]
  const rows = resultRows(members, x => !x.hidden)
  t.same(rows.map(r => [r.profile_id, r.rank]), [['a', 1], ['c', 2], ['d', 2], ['e', 4], ['f', 5]])
  t.same(resultRows(members, x => !x.hidden, { index: 1, count: 2 }).map(r => r.profile_id), ['a', 'c'])
  t.same(resultRows(members, x => !x.hidden, { index: 2, count: 2 }).map(r => r.profile_id), ['d', 'e', 'f'])
})
