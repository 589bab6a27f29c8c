//! [`Names`]: a map from names to values held as one sorted vector, for the small maps that a
//! results document keeps once per host and second (a host's disks and interfaces, a second's
//! operations). A `BTreeMap` allocates a node for eleven entries on its first insert, about a
//! kilobyte for one disk's figures; a thousand hosts keep sixty such maps a minute each.
//! Written and read as a JSON object with its keys in order, as a `BTreeMap` is.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Values by name, in the names' order, held in a vector of exactly their number.
#[derive(Debug, Clone, PartialEq)]
pub struct Names<V> {
    entries: Vec<(String, V)>,
}

impl<V> Default for Names<V> {
    fn default() -> Self {
        Names {
            entries: Vec::new(),
        }
    }
}

impl<V> Names<V> {
    /// An empty map (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.find(name).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `name`, to change.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        self.find(name).ok().map(|i| &mut self.entries[i].1)
    }

    /// Whether `name` has a value.
    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name`'s value; the value it had, if any.
    pub fn insert(&mut self, name: String, value: V) -> Option<V> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.reserve_exact(1);
                self.entries.insert(i, (name, value));
                None
            }
        }
    }

    /// `name`'s value, made the default first where it had none.
    pub fn entry_or_default(&mut self, name: &str) -> &mut V
    where
        V: Default,
    {
        let i = match self.find(name) {
            Ok(i) => i,
            Err(i) => {
                self.entries.reserve_exact(1);
                self.entries.insert(i, (name.to_string(), V::default()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Keeps only the entries `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values, in their names' order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<V> std::ops::Index<&str> for Names<V> {
    type Output = V;
    /// The value of `name`; panics where there is none, as a map's index does.
    fn index(&self, name: &str) -> &V {
        self.get(name).expect("no entry of that name")
    }
}

impl<V> FromIterator<(String, V)> for Names<V> {
    /// The last value of a name given twice is kept, as a map's insert would.
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let mut entries: Vec<(String, V)> = iter.into_iter().collect();
        // Stable: of equal names the last given ends last, and is the one kept.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<(String, V)> = Vec::with_capacity(entries.len());
        for e in entries {
            match kept.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => kept.push(e),
            }
        }
        kept.shrink_to_fit();
        Names { entries: kept }
    }
}

impl<V, const N: usize> From<[(String, V); N]> for Names<V> {
    fn from(entries: [(String, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<V> IntoIterator for Names<V> {
    type Item = (String, V);
    type IntoIter = std::vec::IntoIter<(String, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, V> IntoIterator for &'a Names<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, V)>,
        fn(&'a (String, V)) -> (&'a String, &'a V),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<V: Serialize> Serialize for Names<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Names<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Of<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Of<V> {
            type Value = Names<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of names")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Names<V>, A::Error> {
                // A size hint is the document's word: allocate by it only up to a bound.
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
                while let Some(e) = map.next_entry::<String, V>()? {
                    entries.push(e);
                }
                Ok(entries.into_iter().collect())
            }
        }
        d.deserialize_map(Of(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::Names;

    proptest! {
        /// Whatever is inserted, in whatever order, the map holds, lists and writes what a
        /// `BTreeMap` given the same inserts does, and reads back from its JSON as itself.
        #[test]
        fn names_behave_as_a_btreemap(inserts in proptest::collection::vec(("[a-d]{0,3}", 0u32..100), 0..24),
                                      drop_below in 0u32..100) {
            let mut names = Names::new();
            let mut tree = BTreeMap::new();
            for (k, v) in &inserts {
                prop_assert_eq!(names.insert(k.clone(), *v), tree.insert(k.clone(), *v));
            }
            prop_assert_eq!(names.len(), tree.len());
            prop_assert_eq!(names.iter().collect::<Vec<_>>(), tree.iter().collect::<Vec<_>>());
            for (k, _) in &inserts {
                prop_assert_eq!(names.get(k), tree.get(k));
            }
            prop_assert_eq!(names.get("zz"), None);
            let json = serde_json::to_string(&names).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&tree).unwrap());
            let back: Names<u32> = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(&back, &names);
            let collected: Names<u32> = inserts.iter().cloned().collect();
            prop_assert_eq!(&collected, &names);
            names.retain(|_, v| *v >= drop_below);
            tree.retain(|_, v| *v >= drop_below);
            prop_assert_eq!(names.iter().collect::<Vec<_>>(), tree.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_name_given_twice_in_a_document_keeps_its_last_value() {
        let n: Names<u32> = serde_json::from_str(r#"{"b": 1, "a": 2, "b": 3}"#).unwrap();
        assert_eq!(
            n.iter().collect::<Vec<_>>(),
            [(&"a".to_string(), &2), (&"b".to_string(), &3)]
        );
        assert!(serde_json::from_str::<Names<u32>>("[1, 2]").is_err());
    }

    #[test]
    fn entry_or_default_adds_once() {
        let mut n: Names<u64> = Names::new();
        *n.entry_or_default("read") += 2;
        *n.entry_or_default("read") += 3;
        *n.entry_or_default("write") += 1;
        assert_eq!(n.get("read"), Some(&5));
        assert_eq!(n.len(), 2);
    }
}
