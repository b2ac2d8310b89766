// What a room display may know of a class: the view the display page and the
// display streams get. A member the coach hid keeps a place in it, so that the
// display hides their tile, but none of their numbers, and their place in the
// ranking does not tell how they did: hidden members come last, by name. The
// coach page gets the whole view.
import type { ClassMemberView, ClassView } from './types.ts'

const NO_ZONE_MINUTES: ClassMemberView['zone_minutes'] = [0, 0, 0, 0, 0]

/** The view without the numbers of the members hidden from displays. */
export function forDisplays (view: ClassView): ClassView {
  if (!view.members.some(m => m.hidden)) return view
  const shown = view.members.filter(m => !m.hidden)
  const hidden = view.members.filter(m => m.hidden)
    .map(m => ({ ...m, effort_points: 0, zone_minutes: NO_ZONE_MINUTES, alert: false }))
    .sort((a, b) => a.display_name.localeCompare(b.display_name))
  return { ...view, members: [...shown, ...hidden] }
}
