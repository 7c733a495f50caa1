//! Overflow episodes at a bottleneck queue, and which flows each catches.
//!
//! A flow's loss event rate, which sets what TFRC's equation and a window's
//! halvings give it, is the overflows that catch one of its packets over the
//! packets it sends. When a weighted connection's loss event rate departs
//! from its peers' (MulTFRC's scavenger met 0.39 of its control's among
//! Linux CUBIC flows, testbed/README.md), the question is whether the queue
//! overflowed differently or the same overflows caught it differently. This
//! groups a run's queue drops into episodes and counts, per flow, the share
//! of episodes that dropped at least one of its packets.
//!
//! An episode is a run of throughput bins (100 ms by default) in which the
//! queue dropped packets, bins apart by at most [`MERGE_GAP_BINS`] empty bins
//! counted as one: at 40 ms one overflow and the flows' answer to it span
//! two to three bins.

use serde::Deserialize;
use serde::Serialize;

/// Empty bins an episode may span and stay one episode.
pub const MERGE_GAP_BINS: usize = 1;

/// The episodes at one queue after the warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episodes {
    /// Episodes per second.
    pub per_s: f64,
    /// Mean number of flows an episode dropped packets of.
    pub flows_per_episode: f64,
    /// Per flow, the share of episodes that dropped at least one of its
    /// packets.
    pub caught_share: Vec<f64>,
}

/// The episodes in `drops[flow][bin]` (queue drops per flow and bin, the
/// measured bins only, all of `bin_s` seconds); `None` when there are no
/// bins or no drops.
pub fn find(drops: &[Vec<u64>], bin_s: f64) -> Option<Episodes> {
    let bins = drops.iter().map(Vec::len).max().unwrap_or(0);
    if bins == 0 || bin_s <= 0.0 {
        return None;
    }
    let dropped = |flow: &Vec<u64>, bin: usize| flow.get(bin).is_some_and(|&n| n > 0);
    // Per episode, whether it caught each flow.
    let mut episodes: Vec<Vec<bool>> = Vec::new();
    let mut last_drop: Option<usize> = None;
    for bin in (0..bins).filter(|&bin| drops.iter().any(|flow| dropped(flow, bin))) {
        let continues = last_drop.is_some_and(|last| bin - last <= MERGE_GAP_BINS + 1);
        if !continues {
            episodes.push(vec![false; drops.len()]);
        }
        if let Some(caught) = episodes.last_mut() {
            for (flow, caught) in drops.iter().zip(caught.iter_mut()) {
                *caught |= dropped(flow, bin);
            }
        }
        last_drop = Some(bin);
    }
    if episodes.is_empty() {
        return None;
    }
    let count = episodes.len() as f64;
    let caught_share =
        (0..drops.len()).map(|flow| episodes.iter().filter(|e| e[flow]).count() as f64 / count).collect();
    let flows_per_episode = episodes.iter().map(|e| e.iter().filter(|&&c| c).count()).sum::<usize>() as f64 / count;
    Some(Episodes { per_s: count / (bins as f64 * bin_s), flows_per_episode, caught_share })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_a_bin_apart_are_one_episode_and_two_bins_apart_are_two() {
        // Bins:        0  1  2  3  4  5  6  7  8  9
        let a = vec![0, 2, 0, 1, 0, 0, 3, 0, 0, 0];
        let b = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let episodes = find(&[a, b], 0.1).expect("there are drops");
        // Bins 1 and 3 merge (one empty bin between), 6 stands alone (two
        // empty bins before it), 9 likewise.
        assert_eq!(episodes.per_s, 3.0);
        assert_eq!(episodes.caught_share, vec![2.0 / 3.0, 1.0 / 3.0]);
        assert_eq!(episodes.flows_per_episode, 1.0);
    }

    #[test]
    fn an_episode_counts_every_flow_it_dropped_once() {
        let a = vec![1, 1, 1, 0, 0, 0];
        let b = vec![0, 0, 4, 0, 0, 0];
        let c = vec![0, 0, 0, 0, 0, 0];
        let episodes = find(&[a, b, c], 0.5).expect("there are drops");
        assert_eq!(episodes.per_s, 1.0 / 3.0);
        assert_eq!(episodes.caught_share, vec![1.0, 1.0, 0.0]);
        assert_eq!(episodes.flows_per_episode, 2.0);
    }

    #[test]
    fn no_drops_or_no_bins_give_no_episodes() {
        assert_eq!(find(&[vec![0, 0, 0]], 0.1), None);
        assert_eq!(find(&[vec![], vec![]], 0.1), None);
        assert_eq!(find(&[], 0.1), None);
    }
}
