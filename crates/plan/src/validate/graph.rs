//! Graph algorithms on tasks addressed by index. `deps[i]` lists i's prerequisites and
//! `dependents[i]` the tasks that need i; edges run prerequisite -> dependent.
//!
//! Everything is iterative (explicit queues and stacks) because plans come from a model and
//! may be 100,000 tasks deep; recursion would overflow the stack.

/// Marks an index not yet visited; indices are below `u32::MAX` (checked by validation).
const NONE: u32 = u32::MAX;

/// Reverse adjacency; each list ascending because tasks are visited in index order.
pub(super) fn dependents(deps: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new(); deps.len()];
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            out[d as usize].push(i as u32);
        }
    }
    out
}

/// Kahn's algorithm. Shorter than the number of tasks exactly when there is a cycle.
pub(super) fn topological_order(deps: &[Vec<u32>], dependents: &[Vec<u32>]) -> Vec<u32> {
    let mut pending: Vec<u32> = deps.iter().map(|d| d.len() as u32).collect();
    let mut order: Vec<u32> = Vec::with_capacity(deps.len());
    order.extend((0..deps.len() as u32).filter(|&i| pending[i as usize] == 0));
    // `order` doubles as the queue: everything before `head` has been expanded.
    let mut head = 0;
    while let Some(&u) = order.get(head) {
        head += 1;
        for &v in &dependents[u as usize] {
            pending[v as usize] -= 1;
            if pending[v as usize] == 0 {
                order.push(v);
            }
        }
    }
    order
}

/// Wave of each task (edges on the longest path from a root) and the tasks of each wave in
/// declaration order. `order` must be a complete topological order.
pub(super) fn waves(deps: &[Vec<u32>], order: &[u32]) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut wave = vec![0u32; deps.len()];
    for &u in order {
        let u = u as usize;
        wave[u] = deps[u]
            .iter()
            .map(|&d| wave[d as usize] + 1)
            .max()
            .unwrap_or(0);
    }
    let count = wave.iter().max().map_or(0, |&m| m as usize + 1);
    let mut waves = vec![Vec::new(); count];
    for (i, &w) in wave.iter().enumerate() {
        waves[w as usize].push(i as u32);
    }
    (wave, waves)
}

/// A longest chain, root first. From the lowest-index task starting a longest chain, each
/// step takes the lowest-index dependent that still continues one, so ties are stable.
pub(super) fn critical_path(dependents: &[Vec<u32>], order: &[u32]) -> Vec<u32> {
    // height[i]: edges on the longest path from i down to a sink.
    let mut height = vec![0u32; dependents.len()];
    for &u in order.iter().rev() {
        let u = u as usize;
        height[u] = dependents[u]
            .iter()
            .map(|&v| height[v as usize] + 1)
            .max()
            .unwrap_or(0);
    }
    let Some(&top) = height.iter().max() else {
        return Vec::new();
    };
    // A task with the greatest height has nothing before it, or the chain would be longer.
    let Some(mut cur) = height.iter().position(|&h| h == top) else {
        return Vec::new();
    };
    let mut path = Vec::with_capacity(top as usize + 1);
    path.push(cur as u32);
    while height[cur] > 0 {
        let want = height[cur] - 1;
        let Some(&next) = dependents[cur]
            .iter()
            .find(|&&v| height[v as usize] == want)
        else {
            break;
        };
        cur = next as usize;
        path.push(next);
    }
    path
}

/// One shortest cycle per strongly connected component with more than one task (self-loops
/// are never edges here), each as indices `start -> ... -> start`, where `start` is the
/// component's first task in declaration order; cycles come in order of their start.
pub(super) fn cycles(dependents: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let n = dependents.len();
    let comp = strongly_connected(dependents);
    let mut size = vec![0u32; n];
    for &c in &comp {
        size[c as usize] += 1;
    }

    let mut out = Vec::new();
    let mut done = vec![false; n];
    // BFS parents, reset after each search so the whole pass stays linear.
    let mut parent = vec![NONE; n];
    let mut queue: Vec<u32> = Vec::new();
    for start in 0..n {
        let c = comp[start] as usize;
        if size[c] < 2 || std::mem::replace(&mut done[c], true) {
            continue;
        }
        let start = start as u32;
        queue.clear();
        queue.push(start);
        parent[start as usize] = start;
        let mut closing = None;
        let mut head = 0;
        // Breadth-first, so the first edge back to `start` closes a shortest cycle.
        'search: while let Some(&u) = queue.get(head) {
            head += 1;
            for &w in &dependents[u as usize] {
                if comp[w as usize] as usize != c {
                    continue;
                }
                if w == start {
                    closing = Some(u);
                    break 'search;
                }
                if parent[w as usize] == NONE {
                    parent[w as usize] = u;
                    queue.push(w);
                }
            }
        }
        if let Some(last) = closing {
            let mut path = vec![start];
            let mut x = last;
            // Bounded by the queue length: parents always lead back to `start`.
            for _ in 0..queue.len() {
                if x == start {
                    break;
                }
                path.push(x);
                x = parent[x as usize];
            }
            path[1..].reverse();
            path.push(start);
            out.push(path);
        }
        for &q in &queue {
            parent[q as usize] = NONE;
        }
    }
    out
}

/// Tarjan's algorithm with an explicit call stack: the component id of every task.
fn strongly_connected(adj: &[Vec<u32>]) -> Vec<u32> {
    let n = adj.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut comp = vec![NONE; n];
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    // (task, position of the next edge to follow)
    let mut call: Vec<(u32, usize)> = Vec::new();

    for root in 0..n as u32 {
        if index[root as usize] != NONE {
            continue;
        }
        index[root as usize] = next_index;
        low[root as usize] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        call.push((root, 0));

        while let Some(&(v, edge)) = call.last() {
            let vi = v as usize;
            if let Some(&w) = adj[vi].get(edge) {
                if let Some(top) = call.last_mut() {
                    top.1 += 1;
                }
                let wi = w as usize;
                if index[wi] == NONE {
                    index[wi] = next_index;
                    low[wi] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[wi] = true;
                    call.push((w, 0));
                } else if on_stack[wi] {
                    low[vi] = low[vi].min(index[wi]);
                }
                continue;
            }
            call.pop();
            if low[vi] == index[vi] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    comp[w as usize] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
            if let Some(&(parent, _)) = call.last() {
                low[parent as usize] = low[parent as usize].min(low[vi]);
            }
        }
    }
    comp
}

/// The chain with the greatest total weight, root first, visiting tasks in `order` (which
/// must be topological). Ties prefer the lower index, at the end and at each step back.
pub(super) fn heaviest_chain(
    deps: &[Vec<u32>],
    order: impl Iterator<Item = u32>,
    weight: impl Fn(usize) -> f64,
) -> (f64, Vec<u32>) {
    let n = deps.len();
    let mut total = vec![0.0f64; n];
    let mut pred = vec![NONE; n];
    for u in order {
        let u = u as usize;
        let mut best = 0.0;
        let mut best_pred = NONE;
        for &d in &deps[u] {
            let t = total[d as usize];
            if best_pred == NONE || t > best || (t == best && d < best_pred) {
                best = t;
                best_pred = d;
            }
        }
        total[u] = weight(u) + best;
        pred[u] = best_pred;
    }
    let mut end = None;
    for (i, &t) in total.iter().enumerate() {
        if end.is_none_or(|(_, b)| t > b) {
            end = Some((i, t));
        }
    }
    let Some((end, sum)) = end else {
        return (0.0, Vec::new());
    };
    let mut path = vec![end as u32];
    let mut x = pred[end];
    // Bounded by n in case `order` was not topological: never loop forever.
    while x != NONE && path.len() <= n {
        path.push(x);
        x = pred[x as usize];
    }
    path.reverse();
    (sum, path)
}

/// Every task `i` depends on, directly or not (iterative DFS).
pub(crate) fn ancestors(deps: &[Vec<u32>], i: usize) -> std::collections::HashSet<u32> {
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<u32> = deps[i].clone();
    while let Some(d) = stack.pop() {
        if seen.insert(d) {
            stack.extend_from_slice(&deps[d as usize]);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(u32, u32)], n: usize) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let mut deps = vec![Vec::new(); n];
        for &(from, to) in edges {
            deps[to as usize].push(from);
        }
        let dependents = dependents(&deps);
        (deps, dependents)
    }

    #[test]
    fn tarjan_finds_components() {
        // 0 -> 1 -> 2 -> 0, 3 -> 4 -> 3, 5 alone
        let (_, dependents) = graph(&[(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (2, 3)], 6);
        let comp = strongly_connected(&dependents);
        assert_eq!(comp[0], comp[1]);
        assert_eq!(comp[1], comp[2]);
        assert_eq!(comp[3], comp[4]);
        assert_ne!(comp[0], comp[3]);
        assert_ne!(comp[5], comp[0]);
        assert_eq!(cycles(&dependents), vec![vec![0, 1, 2, 0], vec![3, 4, 3]]);
    }

    #[test]
    fn shortest_cycle_through_start() {
        // 0 -> 1 -> 2 -> 3 -> 0 and a shortcut 1 -> 3.
        let (_, dependents) = graph(&[(0, 1), (1, 2), (2, 3), (3, 0), (1, 3)], 4);
        assert_eq!(cycles(&dependents), vec![vec![0, 1, 3, 0]]);
    }

    #[test]
    fn heaviest_chain_prefers_weight_over_length() {
        // 0 -> 1 -> 2, and 3 -> 2 where 3 is heavy.
        let (deps, _) = graph(&[(0, 1), (1, 2), (3, 2)], 4);
        let w = [1.0, 1.0, 1.0, 5.0];
        let (sum, path) = heaviest_chain(&deps, [0, 3, 1, 2].into_iter(), |i| w[i]);
        assert_eq!(sum, 6.0);
        assert_eq!(path, vec![3, 2]);
    }
}
