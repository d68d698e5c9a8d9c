//! Parsing of human-friendly sizes (`4KiB`, `2MiB`, `16GiB`, `1.5GB`, `4096`).

/// Parses a byte size. Binary suffixes (`KiB`, `MiB`, `GiB`, `TiB`, `PiB`, also `K`, `M`, `G`,
/// `T`, `P`) multiply by powers of 1024, decimal ones (`KB`, `MB`, `GB`, `TB`, `PB`) by powers
/// of 1000.
/// Underscores are allowed between digits, as separators. Returns a message on failure.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "p" | "pib" => 1 << 50,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "pb" => 1_000_000_000_000_000,
        other => return Err(format!("unknown size suffix `{other}` in `{text}`")),
    };
    let not_a_size = || format!("`{text}` is not a size (expected e.g. `4KiB`, `16GiB`)");
    let too_large = || format!("`{text}` is not a whole number of bytes below 2^64");
    if num.is_empty() {
        return Err(not_a_size());
    }
    let digit_at = |i: Option<usize>| i.and_then(|i| num.as_bytes().get(i)).is_some_and(u8::is_ascii_digit);
    if num.match_indices('_').any(|(i, _)| !digit_at(i.checked_sub(1)) || !digit_at(Some(i + 1))) {
        return Err(not_a_size());
    }
    let num = &num.replace('_', "");
    // Whole numbers are exact (an f64 would round sizes above 2^53); fractions go through f64.
    if !num.contains('.') {
        let value: u64 = num.parse().map_err(|_| too_large())?;
        return value.checked_mul(mult).ok_or_else(too_large);
    }
    let value: f64 = num.parse().map_err(|_| not_a_size())?;
    let bytes = value * mult as f64;
    if !(0.0..1.8e19).contains(&bytes) || bytes.fract() != 0.0 {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// The binary units sizes are written in, largest first.
const UNITS: [(&str, u64); 5] = [("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];

/// Formats a byte count with the largest binary unit that divides it (`4KiB`, `1.5GiB` style
/// for non-exact values).
pub fn format_bytes(bytes: u64) -> String {
    for (name, size) in UNITS {
        if bytes >= size {
            return if bytes % size == 0 {
                format!("{}{name}", bytes / size)
            } else {
                format!("{:.2}{name}", bytes as f64 / size as f64)
            };
        }
    }
    format!("{bytes}B")
}

/// Formats a byte count exactly, in the largest binary unit that divides it (`4097B`,
/// `1536MiB`): what [`parse_bytes`] reads back as the same count, for configuration files and
/// for errors about a size, where [`format_bytes`]'s rounding would hide the problem.
pub fn exact_bytes(bytes: u64) -> String {
    match UNITS.iter().find(|&&(_, size)| bytes >= size && bytes % size == 0) {
        Some((name, size)) => format!("{}{name}", bytes / size),
        None => format!("{bytes}B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("16GiB"), Ok(16 << 30));
        assert_eq!(parse_bytes("1.5 MiB"), Ok(3 << 19));
        assert_eq!(parse_bytes("4_096"), Ok(4096));
        assert_eq!(parse_bytes("1_000.5_0KB"), Ok(1_000_500));
        for separator_not_between_digits in ["_4KiB", "4_KiB", "4K_iB", "4KiB_", "4__0", "1._5", "1_.5"] {
            assert!(parse_bytes(separator_not_between_digits).is_err(), "{separator_not_between_digits}");
        }
        assert_eq!(parse_bytes("2MB"), Ok(2_000_000));
        assert!(parse_bytes("4XB").is_err());
        assert!(parse_bytes("KiB").is_err());
        assert!(parse_bytes("0.5B").is_err());
        // Exact above 2^53, and no wrap-around past 2^64.
        assert_eq!(parse_bytes("9007199254740993"), Ok(9_007_199_254_740_993));
        assert_eq!(parse_bytes("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_bytes("18446744073709551616").is_err());
        assert!(parse_bytes("16777216TiB").is_err());
        assert_eq!((parse_bytes("1PiB"), parse_bytes("2PB")), (Ok(1 << 50), Ok(2_000_000_000_000_000)));
        assert!(parse_bytes("16384PiB").is_err());
    }

    #[test]
    fn formats_sizes() {
        assert_eq!((exact_bytes(4097), exact_bytes(3 << 29), exact_bytes(0)), ("4097B".into(), "1536MiB".into(), "0B".into()));
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(3 << 29), "1.50GiB");
        assert_eq!(format_bytes(12), "12B");
        assert_eq!((format_bytes(1 << 50), exact_bytes(3 << 49)), ("1PiB".into(), "1536TiB".into()));
    }

    proptest::proptest! {
        /// An exact size reads back as itself, whatever its unit (a shift up to 50 bits makes
        /// every unit likely).
        #[test]
        fn exact_sizes_read_back(n in proptest::prelude::any::<u64>(), shift in 0u32..51) {
            let bytes = n >> shift << shift;
            proptest::prop_assert_eq!(parse_bytes(&exact_bytes(bytes)), Ok(bytes));
        }
    }
}
