//! The hash tables of a reading thread: raw URLs to their aggregates, and domain names to
//! the thread's numbers for them. Both are open-addressing tables keyed by a 96-bit hash, so
//! that the slot of a key can be loaded into the cache ahead of its lookup.

/// A raw URL's (or name's) key and check: 96 bits of its XXH3-128 (the key never 0, which
/// marks an empty slot).
pub fn raw_hash(raw: &[u8]) -> (u64, u32) {
    let h = xxhash_rust::xxh3::xxh3_128(raw);
    ((h as u64).max(1), (h >> 64) as u32)
}

/// Asks for the cache line of `at` ahead of its use. A hint, where a plain read would hold
/// back every later instruction once the core's out-of-order window fills while it misses
/// (the normalisation between a domain's touch and its lookup is longer than that window).
#[inline]
pub(crate) fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault; `at` is a reference.
    #[allow(unsafe_code)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (at as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Multiplicative hashing of a key onto `64 - shift` bits.
fn home(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
}

/// A raw URL's slot: what every line of it changes (hits, latest time), and where the rest of
/// its aggregate is.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
pub struct Slot {
    /// 0: empty.
    pub key: u64,
    pub hits: u64,
    pub ts: i64,
    pub check: u32,
    /// The aggregate's place ([`super::run::AggRef`]).
    pub agg: u32,
}

/// Raw URLs: linear probing, at most half full. A known URL costs one cache line.
pub struct Table {
    pub slots: Vec<Slot>,
    shift: u32,
    pub len: usize,
}

impl Table {
    pub fn new(slots: usize) -> Table {
        let slots = slots.next_power_of_two().max(64);
        Table {
            slots: vec![Slot::default(); slots],
            shift: 64 - slots.trailing_zeros(),
            len: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        (self.slots.len() * std::mem::size_of::<Slot>()) as u64
    }

    /// Loads the slot of `key` into the cache ahead of [`Table::find`].
    pub fn touch(&self, key: u64) {
        prefetch(&self.slots[home(key, self.shift)]);
    }

    /// `Ok(slot)` of `key`, or `Err(the empty slot it would go to)`.
    pub fn find(&self, key: u64, check: u32) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = home(key, self.shift);
        loop {
            let s = &self.slots[i];
            if s.key == key && s.check == check {
                return Ok(i);
            }
            if s.key == 0 {
                return Err(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts `slot` in the empty slot `at` (from `find`), growing the table first if it would
    /// be over half full; returns where it went.
    pub fn insert(&mut self, at: usize, slot: Slot) -> usize {
        let mut at = at;
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
            at = self.find(slot.key, slot.check).unwrap_or_else(|i| i);
        }
        self.slots[at] = slot;
        self.len += 1;
        at
    }

    fn grow(&mut self) {
        let mut bigger = Table::new(self.slots.len() * 2);
        for s in self.slots.iter().filter(|s| s.key != 0) {
            if let Err(i) = bigger.find(s.key, s.check) {
                bigger.slots[i] = *s;
            }
        }
        bigger.len = self.len;
        *self = bigger;
    }
}

/// `n` empty domain slots, each written: zeroed memory straight from the system is mapped to
/// one page of zeros until written, and a write after a read (a lookup) then changes the
/// mapping, which interrupts every core running the process to flush its view of it.
fn written_zeros(n: usize) -> Vec<(u64, u32, u32)> {
    let mut slots = Vec::with_capacity(n);
    slots.resize_with(n, || (0, 0, 0));
    slots
}

/// A thread's domains, found by the [`raw_hash`] of the name like raw URLs are.
pub struct DomainTable {
    slots: Vec<(u64, u32, u32)>,
    shift: u32,
    pub names: Vec<String>,
    pub bytes: u64,
}

impl Default for DomainTable {
    fn default() -> Self {
        DomainTable {
            slots: written_zeros(1024),
            shift: 64 - 10,
            names: Vec::new(),
            bytes: 1024 * 16,
        }
    }
}

impl DomainTable {
    pub fn touch(&self, key: u64) {
        prefetch(&self.slots[home(key, self.shift)]);
    }

    /// The number of `name` (whose [`raw_hash`] is `key`, `check`).
    pub fn intern(&mut self, (key, check): (u64, u32), name: &str) -> u32 {
        let mask = self.slots.len() - 1;
        let mut i = home(key, self.shift);
        loop {
            let (k, c, id) = self.slots[i];
            if k == key && c == check {
                return id;
            }
            if k == 0 {
                break;
            }
            i = (i + 1) & mask;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.slots[i] = (key, check, id);
        self.bytes += name.len() as u64 + 48;
        if self.names.len() * 2 > self.slots.len() {
            let bigger = written_zeros(self.slots.len() * 2);
            let old = std::mem::replace(&mut self.slots, bigger);
            self.shift -= 1;
            self.bytes += old.len() as u64 * 16;
            let mask = self.slots.len() - 1;
            for s in old.into_iter().filter(|s| s.0 != 0) {
                let mut i = home(s.0, self.shift);
                while self.slots[i].0 != 0 {
                    i = (i + 1) & mask;
                }
                self.slots[i] = s;
            }
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_again_across_growth() {
        let mut t = Table::new(4);
        let keys: Vec<(u64, u32)> = (0..1000u32)
            .map(|i| raw_hash(format!("http://a.ru/{i}").as_bytes()))
            .collect();
        for (n, &(key, check)) in keys.iter().enumerate() {
            let at = t.find(key, check).unwrap_err();
            t.insert(
                at,
                Slot {
                    key,
                    check,
                    agg: n as u32,
                    ..Slot::default()
                },
            );
        }
        assert_eq!(t.len, 1000);
        assert!(t.slots.len() >= 2000);
        for (n, &(key, check)) in keys.iter().enumerate() {
            assert_eq!(t.slots[t.find(key, check).unwrap()].agg, n as u32);
        }
        // The same key with another check is another URL.
        assert!(t.find(keys[0].0, keys[0].1 ^ 1).is_err());

        let mut d = DomainTable::default();
        let names: Vec<String> = (0..3000).map(|i| format!("d{i}.ru")).collect();
        for (n, name) in names.iter().enumerate() {
            assert_eq!(d.intern(raw_hash(name.as_bytes()), name), n as u32);
        }
        for (n, name) in names.iter().enumerate().rev() {
            assert_eq!(d.intern(raw_hash(name.as_bytes()), name), n as u32);
        }
        assert_eq!(d.names, names);
    }
}
