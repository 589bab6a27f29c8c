//! A command line as the reports print it to be copied: each word quoted for a POSIX shell
//! where it needs it (`--target-latency 'p99<=2ms'`), so that pasting it runs the same argv.

/// `argv` as one line a shell reads back to the same words.
pub fn shell_command(argv: &[String]) -> String {
    // A NUL cannot be in an argument the kernel passed; were one there, the words as they are.
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_command_reads_back_as_its_words() {
        let argv: Vec<String> = [
            "stormark",
            "run",
            "/mnt/my data",
            "--target-latency",
            "p99<=2ms",
            "--expect",
            "bw>=1GB/s",
            "--name",
            "it's $HOME",
        ]
        .map(String::from)
        .to_vec();
        let line = shell_command(&argv);
        assert!(line.contains("'p99<=2ms'"), "{line}");
        assert!(line.starts_with("stormark run "), "{line}");
        assert_eq!(shlex::split(&line), Some(argv));
    }

    proptest! {
        /// Any words (no NUL): the printed line splits back to them.
        #[test]
        fn any_words_round_trip(words in proptest::collection::vec("[^\u{0}]{0,12}", 1..6)) {
            let line = shell_command(&words);
            prop_assert_eq!(shlex::split(&line), Some(words));
        }
    }
}
