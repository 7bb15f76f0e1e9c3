//! Values a process computes once per key: a rung's SASS or bank counts are asked for again
//! when it is the parent of the next rung (`explain` of every rung, `docs`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, OnceLock};

/// A process-wide table of computed values; a failed computation is not kept.
pub struct Memo<K, V>(OnceLock<Mutex<HashMap<K, V>>>);

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    pub const fn new() -> Self {
        Self(OnceLock::new())
    }

    /// The value under `key`, computed by `compute` the first time. Two threads asking at once
    /// may both compute it; the table keeps one.
    pub fn get_or_try<E>(&self, key: K, compute: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let table = self.0.get_or_init(Default::default);
        if let Some(hit) = table.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        let value = compute()?;
        table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, value.clone());
        Ok(value)
    }

    /// The value under `key`, computed by `compute` the first time.
    pub fn get_or(&self, key: K, compute: impl FnOnce() -> V) -> V {
        let Ok(value) = self.get_or_try(key, || Ok::<_, std::convert::Infallible>(compute()));
        value
    }
}

impl<K: Eq + Hash, V: Clone> Default for Memo<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_computed_once_and_a_failure_not_kept() {
        static MEMO: Memo<u32, u32> = Memo::new();
        let mut calls = 0;
        let mut get = |key| {
            MEMO.get_or_try(key, || {
                calls += 1;
                if key == 0 { Err("no") } else { Ok(key * 10) }
            })
        };
        assert_eq!((get(1), get(1), get(2)), (Ok(10), Ok(10), Ok(20)));
        assert_eq!((get(0), get(0)), (Err("no"), Err("no")));
        assert_eq!(calls, 4, "1 and 2 once each, the failing 0 each time");
    }
}
