//! Phase 19, sampling: the token from the logits, the run's temperature and
//! its generator. At temperature zero one pass over the vocabulary finds the
//! largest logit; above zero a second pass sums the exponentials and a third
//! draws. Every pass is resumable at any vocabulary entry.

use crate::fixed::{draw, exp_index, next_seed, sampling_difference};
use crate::kernel::argmax;
use crate::planner::Chunk;
use crate::state::{Header, MAX_PASS, NO_TOKEN, SUM_PASS};

use super::forward::Forward;

impl Forward<'_, '_> {
    /// The exponential of a logit at the run's temperature.
    #[inline(always)]
    fn weight(&self, h: &Header, logit: i64) -> u64 {
        let d = sampling_difference(h.max, logit, h.temperature);
        self.m.exp_entry(exp_index(d)) as u64
    }

    /// One chunk of one sampling pass; the chunk that finishes the last
    /// pass emits the token.
    pub(super) fn sample(&mut self, h: &mut Header, chunk: &Chunk<'_>) {
        let at = chunk.at;
        let (start, end) = (at.row as usize, (at.row + chunk.count) as usize);
        match at.pass {
            // Maximum: the largest logit, the lowest index among equals.
            MAX_PASS => {
                if start == 0 {
                    h.max = i64::MIN;
                    h.chosen = 0;
                }
                argmax(&self.b.logits[start..end], start, &mut h.max, &mut h.chosen);
            }
            // Sum: of every entry's exponential; its last chunk advances the
            // generator and draws the remainder.
            SUM_PASS => {
                if start == 0 {
                    h.sum = 0;
                }
                for i in start..end {
                    h.sum = h.sum.wrapping_add(self.weight(h, self.b.logits[i]));
                }
                if chunk.completes {
                    h.seed = next_seed(h.seed);
                    h.remainder = draw(h.seed, h.sum);
                }
            }
            // Draw: the first entry the remainder falls inside.
            _ => {
                if start == 0 {
                    h.chosen = NO_TOKEN;
                }
                // Once the draw has landed the rest of the walk is charged
                // but skipped: the plan, not the data, decides the cuts.
                for i in start..end {
                    if h.chosen != NO_TOKEN {
                        break;
                    }
                    let e = self.weight(h, self.b.logits[i]);
                    if h.remainder < e {
                        h.chosen = i as u32;
                    } else {
                        h.remainder -= e;
                    }
                }
            }
        }
        if chunk.completes && at.pass == h.run_shape().last_pass() {
            if h.chosen == NO_TOKEN {
                h.chosen = self.m.config.vocab_size - 1;
            }
            self.emit(h, at.generated, h.chosen);
        }
    }

    /// Appends a sampled token and its text; it becomes the current token.
    fn emit(&mut self, h: &mut Header, generated: u32, token: u32) {
        self.b.output_tokens[generated as usize] = token;
        let text = &mut self.b.output_text[h.text_len as usize..];
        let n = self.m.decode_into(h.token, token, text);
        h.text_len += n as u32;
        h.token = token;
        self.sampled = token;
    }
}
