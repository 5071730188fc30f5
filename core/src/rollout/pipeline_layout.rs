//! Where each RollingSync step sits in a drawing of the rollout as a pipeline: steps in columns
//! by how many steps lie before them on their longest chain of dependencies (a step is always to
//! the right of every step it waits for), steps of one column — those that can run side by
//! side — in rows, and an edge from each step to each step that waits for it. Rows within a
//! column follow the rows of the steps they wait for, then the list order, so a line of steps
//! stays a line and parallel branches do not cross needlessly. Pure: the web view multiplies
//! the grid by its own sizes.

/// Where one step is drawn: its column (0: waits for nothing) and its row in that column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepPosition {
    /// The step, 0-based as in the strategy's list.
    pub step: usize,
    pub column: usize,
    pub row: usize,
}

/// The pipeline's grid: one position per step (in list order), the size of the grid, and the
/// edges `(from, to)` (0-based steps) from a step to one that waits for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineLayout {
    pub positions: Vec<StepPosition>,
    pub columns: usize,
    /// The rows of the tallest column.
    pub rows: usize,
    pub edges: Vec<(usize, usize)>,
}

/// The layout of steps that wait for `depends_on` (per step, 0-based steps, as
/// [`super::config::RolloutStep::depends_on`]; a list's step waits for the one before it). A
/// dependency on an unknown step, or a cycle (which a valid strategy has not), is ignored
/// rather than drawn.
#[must_use]
pub fn layout(depends_on: &[Vec<usize>]) -> PipelineLayout {
    let count = depends_on.len();
    let known = |step: usize, dependency: usize| dependency < count && dependency != step;
    // Longest chain before each step, found by relaxing at most `count` times (a cycle stops).
    let mut column = vec![0usize; count];
    for _ in 0..count {
        let mut moved = false;
        for (step, dependencies) in depends_on.iter().enumerate() {
            let wanted = dependencies
                .iter()
                .filter(|&&d| known(step, d))
                .map(|&d| column[d] + 1)
                .max()
                .unwrap_or(0)
                .min(count.saturating_sub(1));
            if wanted > column[step] {
                column[step] = wanted;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let columns = column.iter().max().map_or(0, |&c| c + 1);
    let mut row = vec![0usize; count];
    let mut rows = 0;
    for current in 0..columns {
        let mut members: Vec<usize> = (0..count).filter(|&s| column[s] == current).collect();
        // By the mean row of the steps it waits for (in earlier columns), then list order.
        let key = |step: usize| {
            let placed: Vec<usize> = depends_on[step]
                .iter()
                .filter(|&&d| known(step, d) && column[d] < current)
                .map(|&d| row[d])
                .collect();
            let sum: usize = placed.iter().sum();
            // Twice the mean, in whole numbers: rows 0 and 1 give 1, between them.
            let mean2 = (2 * sum).checked_div(placed.len()).unwrap_or(0);
            (mean2, step)
        };
        members.sort_by_key(|&step| key(step));
        for (index, &step) in members.iter().enumerate() {
            row[step] = index;
        }
        rows = rows.max(members.len());
    }
    let positions = (0..count)
        .map(|step| StepPosition {
            step,
            column: column[step],
            row: row[step],
        })
        .collect();
    let mut edges: Vec<(usize, usize)> = depends_on
        .iter()
        .enumerate()
        .flat_map(|(step, dependencies)| {
            dependencies
                .iter()
                .filter(move |&&d| known(step, d))
                .map(move |&d| (d, step))
        })
        .collect();
    edges.sort_unstable();
    edges.dedup();
    PipelineLayout {
        positions,
        columns,
        rows,
        edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(column, row)` of each step.
    fn grid(layout: &PipelineLayout) -> Vec<(usize, usize)> {
        layout.positions.iter().map(|p| (p.column, p.row)).collect()
    }

    #[test]
    fn a_list_is_one_row() {
        let line = layout(&[vec![], vec![0], vec![1]]);
        assert_eq!(grid(&line), [(0, 0), (1, 0), (2, 0)]);
        assert_eq!((line.columns, line.rows), (3, 1));
        assert_eq!(line.edges, [(0, 1), (1, 2)]);
    }

    #[test]
    fn parallel_steps_share_a_column_and_join_after() {
        // db → (eu ∥ us) → fe
        let graph = layout(&[vec![], vec![0], vec![0], vec![1, 2]]);
        assert_eq!(grid(&graph), [(0, 0), (1, 0), (1, 1), (2, 0)]);
        assert_eq!((graph.columns, graph.rows), (3, 2));
        assert_eq!(graph.edges, [(0, 1), (0, 2), (1, 3), (2, 3)]);
    }

    #[test]
    fn a_step_goes_after_its_longest_chain_and_rows_follow_their_parents() {
        // 0 → 1 → 2; 3 waits for 0 and 2 (column 3); 4 starts alone; 5 after 4.
        let graph = layout(&[vec![], vec![0], vec![1], vec![0, 2], vec![], vec![4]]);
        assert_eq!(
            grid(&graph),
            [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)]
        );
        assert_eq!((graph.columns, graph.rows), (4, 2));
        // A later step in the list, waited for by an earlier one: still to its left.
        let reordered = layout(&[vec![1], vec![], vec![]]);
        assert_eq!(grid(&reordered), [(1, 0), (0, 0), (0, 1)]);
        // Children of the second row's step stay below those of the first.
        let crossing = layout(&[vec![], vec![], vec![1], vec![0]]);
        assert_eq!(grid(&crossing), [(0, 0), (0, 1), (1, 1), (1, 0)]);
    }

    #[test]
    fn nothing_malformed_is_drawn_as_an_edge() {
        assert_eq!(layout(&[]), PipelineLayout::default());
        // A dependency on itself or on no step, and a cycle: bounded, no panic.
        let odd = layout(&[vec![0, 7], vec![2], vec![1]]);
        assert_eq!(odd.edges, [(1, 2), (2, 1)]);
        assert!(odd.positions.iter().all(|p| p.column < 3));
    }
}
