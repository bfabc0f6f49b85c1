//! Stop words: the function words of English and Russian (after the Snowball project's lists),
//! which say nothing about a page's topic. Checked on the lower-cased word before stemming.

use std::sync::OnceLock;

use rustc_hash::FxHashSet;

const ENGLISH: &str = "a about above after again against all am an and any are aren't as at be \
because been before being below between both but by can can't cannot could couldn't did didn't do \
does doesn't doing don't down during each few for from further had hadn't has hasn't have haven't \
having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm \
i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off \
on once only or other ought our ours ourselves out over own same shan't she she'd she'll she's \
should shouldn't so some such than that that's the their theirs them themselves then there there's \
these they they'd they'll they're they've this those through to too under until up very was wasn't \
we we'd we'll we're we've were weren't what what's when when's where where's which while who who's \
whom why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself \
yourselves also just may might must shall us upon yet";

const RUSSIAN: &str =
    "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы \
по только ее мне было вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни \
быть был него до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо \
ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того \
потому этого какой совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда зачем всех \
никогда можно при наконец два об другой хоть после над больше тот через эти нас про всего них \
какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им \
более всегда конечно всю между это эта также который которая которые которого которой которых \
свой своих своей свои весь";

fn set(words: &'static str) -> FxHashSet<&'static str> {
    words.split_ascii_whitespace().collect()
}

/// Whether `word` (lower-cased, `ё` already made `е`, apostrophes made `'`) is a stop word.
pub fn is_stop(word: &str) -> bool {
    static WORDS: OnceLock<FxHashSet<&'static str>> = OnceLock::new();
    WORDS
        .get_or_init(|| {
            let mut s = set(ENGLISH);
            s.extend(set(RUSSIAN));
            s
        })
        .contains(word)
}
