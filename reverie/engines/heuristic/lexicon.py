"""Word lists and signal rules of the heuristic engine, in English and Chinese.

Data only: the modules of :mod:`reverie.engines.heuristic` read these tables.
Extending a list here changes what the heuristic engine sees, nothing else.
(The exclusive value pairs - vim / emacs, tabs / spaces - belong to the one
duplicate and conflict judge, :mod:`reverie.claims`.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from reverie.claims import JOBS, JOINED_NAME, JOINED_WHEN

# the calendar's words, read by phrases and words
from reverie.text import FOREIGN_FUNCTION_WORDS as FOREIGN_FUNCTION_WORDS
from reverie.timerefs import MONTHS as MONTHS, NUMBER_WORDS as NUMBER_WORDS, WEEKDAYS as WEEKDAYS

# Words that cannot point at a class of memories on their own: never a tag,
# never a keyphrase, deprecated by tag governance. A plain set on purpose, so
# that an application may add its own words at start-up.
GENERIC_WORDS: set[str] = set(
    """
    thing things time times day days people person stuff way ways lot lots something anything
    everything nothing someone anyone everyone somebody anybody place places part parts kind sort
    bit year years week weeks month months today tomorrow yesterday morning night evening moment
    idea ideas question questions problem problems issue issues info information help work life
    world guy guys man men woman women fun new old other others good great nice cool awesome amazing
    wow yeah hey hi hello thanks thank user assistant stuff bunch side end start point points number
    case cases example examples fact facts reason reasons name names word words matter matters
    everybody nobody home hour hours minute minutes second seconds weekend today's tonight
    事情 时候 东西 问题 情况 方面 部分 地方 样子 感觉 时间 大家 人们 有人 一些 这些 那些 今天 明天 昨天
    这样 那样 内容 方式 办法 东东 事儿 事 人 一天 最近 当时 之前 以后 后来 用户 助手 信息 一下 的话
    """.split()
)

# Content-free for keyphrases though not stopwords: verbs of liking and asking,
# route cues, time words (time references are resolved separately), fillers.
WEAK_WORDS: frozenset[str] = frozenset(
    """
    prefer prefers preferred like likes liked love loves loved hate hates hated dislike dislikes enjoy
    enjoys enjoyed want wants need needs use uses using used try tries tried help helps let please pls
    gonna wanna gotta kinda sorta lol haha hahaha omg btw fyi doing done feel feels keep keeps start
    started finally recently soon later ago last next first second new old big small little long short
    better best bad worse worst happen happens happened remember remembers talk talked talking ask
    asked asking tell telling exactly exact detail details detailed summarize summarise summary recap
    overview verbatim specifically specific quote word words always never usually often sometimes
    again sure lately mostly probably basically seriously honestly literally anyway anyways wait
    decided decide agreed chose go goes went become becomes wish hope hoped plan plans planning meant
    mean means correction actually true false right wrong whatever ever around lot able via etc
    january february march april may june july august september october november december monday
    tuesday wednesday thursday friday saturday sunday morning afternoon evening tonight tomorrow
    yesterday week month year weeks months years day days similar special exciting inspiring powerful
    thankful helpful happy sad hard easy real important different whole free full fine pretty continue
    check embrace express creative glad proud excited keen loving lovely beautiful wonderful interesting
    funny crazy super totally getting make making find found looks look looking see seen saw hear heard
    share shared sharing thinking hope sounds sound mean take taking took give giving gave come coming
    came put kept guess stuff lots
    喜欢 不喜欢 讨厌 希望 想要 需要 觉得 认为 使用 一下 进行 发生 回顾 总结 细节 具体 原话 详细 概括 上周
    昨天 前天 去年 今年 前年 明年 上个月 本月 这个月 下个月 本周 这周 记得 告诉 知道 决定 打算 计划 一直
    总是 以后 不要 别 请 帮 帮我 可以 应该 能 想 会 要 更 最 比较 特别 非常 真的 其实 然后 还有 已经
    成为 先给 开始 继续 顺便 一起 终于 马上 感到 感觉 有点 真是 还是 可能 一定 所以 因为 不过 而且 听起来
    确实 很多 那个 这个 怎么样 如何 比如 例如 注意 应该是 好像 似乎 当然 只是 一样 不是 就是 的是 或者 以及
    之后 因此 虽然 不过 还要 需要
    """.split()
)

PERSONAL_ROLES: frozenset[str] = frozenset(
    """
    mom mother dad father parent parents wife husband partner sister brother son daughter grandma
    grandmother grandpa grandfather aunt uncle vegetarian vegan introvert extrovert single widow
    dog dogs cat cats pet pets house home car 妈妈 母亲 爸爸 父亲 妻子 丈夫 老婆 老公 宝妈 素食者 狗 猫 宠物
    素食主义者 单身 内向 外向 人 独生子女 person owl bird
    """.split()
)

# Scene -> sub-scene -> keywords (stemmed when the engine loads them).
SCENES: dict[str, dict[str, tuple[str, ...]]] = {
    "work": {
        "coding": tuple(
            """code coding program programming programmer bug bugs debug debugging function api python
            javascript typescript java rust golang sql database deploy deployment git github repo
            repository refactor compiler script server backend frontend docker kubernetes vim emacs
            editor ide framework library linter pytest 代码 编程 程序 调试 函数 接口 数据库 部署 服务器
            前端 后端 脚本 框架 重构""".split()
        ),
        "career": tuple(
            """job jobs career interview promotion boss manager colleague colleagues coworker salary
            resume hired hiring office company startup business client clients 工作 面试 升职 老板 同事
            公司 薪水 简历 上班 职业 创业 客户""".split()
        ),
        "meeting": tuple(
            """meeting meetings standup agenda presentation deadline project projects roadmap 会议 开会
            项目 汇报 截止""".split()
        ),
    },
    "personal": {
        "family": tuple(
            """family kids kid children child son daughter mom mother dad father parents sister
            brother wife husband baby grandma grandpa 家人 家庭 孩子 儿子 女儿 妈妈 爸爸 父母 老婆 老公
            妻子 丈夫 姐姐 妹妹 哥哥 弟弟""".split()
        ),
        "relationship": tuple(
            """friend friends boyfriend girlfriend partner dating wedding marriage married divorce
            breakup 朋友 男朋友 女朋友 约会 婚礼 结婚 恋爱 分手""".split()
        ),
        "identity": tuple(
            """identity transgender lgbtq gay lesbian queer pride trans 身份 性别""".split()
        ),
        "home": tuple(
            """house apartment moving rent neighbor garden pet pets dog dogs cat cats 房子 搬家 租房 宠物
            狗 猫""".split()
        ),
    },
    "health": {
        "fitness": tuple(
            """gym workout exercise running marathon yoga fitness swimming diet 健身 跑步 锻炼 瑜伽 减肥
            游泳 马拉松""".split()
        ),
        "medical": tuple(
            """doctor hospital sick illness disease medicine surgery injury pain symptoms 医生 医院 生病
            药 手术 受伤""".split()
        ),
        "mental": tuple(
            """stress anxiety depression therapy therapist counseling mental burnout 压力 焦虑 抑郁 心理
            咨询""".split()
        ),
    },
    "travel": {
        "trip": tuple(
            """trip travel traveling travelling vacation holiday flight hotel airport abroad tour beach
            旅行 旅游 出差 度假 机票 酒店 出国""".split()
        ),
        "outdoors": tuple("""camping hiking hike mountains lake nature 露营 爬山 徒步""".split()),
    },
    "hobby": {
        "art": tuple(
            """painting paint painted drawing art artist pottery sculpture photography craft 画画 绘画
            艺术 陶艺 摄影""".split()
        ),
        "music": tuple(
            """music song songs guitar piano violin concert band singing 音乐 吉他 钢琴 演唱会 唱歌""".split()
        ),
        "reading": tuple("""book books reading novel novels author 书 读书 小说 阅读""".split()),
        "sports": tuple(
            """football soccer basketball tennis baseball match team 足球 篮球 网球 比赛""".split()
        ),
        "games": tuple("""gaming videogame games playstation xbox nintendo 游戏""".split()),
        "cooking": tuple(
            """cooking recipe baking food dinner restaurant 做饭 烹饪 菜谱 烘焙 美食""".split()
        ),
    },
    "learning": {
        "study": tuple(
            """school class classes course courses study studying exam exams university college degree
            homework lecture student teacher education 学校 课程 考试 大学 学位 作业 学生 老师 教育 学习""".split()
        ),
        "language": tuple(
            """english chinese spanish french japanese language grammar vocabulary 英语 中文 日语 语法
            单词""".split()
        ),
    },
}

AREA_WORDS: dict[str, tuple[str, ...]] = {
    "Code": tuple(
        """code function functions variable variables naming comment comments type hints typing tabs
        spaces indentation test tests refactor python typescript javascript rust java class classes
        style lint 代码 变量 注释 缩进 函数 测试 类型 命名""".split()
    ),
    "Tools": tuple(
        """vim emacs editor ide vscode terminal cli git docker shell tool tools zsh bash tmux browser
        rm trash 编辑器 工具 终端 命令行""".split()
    ),
    "Workflow": tuple(
        """review deploy deployment commit commits pr branch branches ci release process workflow
        meeting meetings plan planning merge 部署 提交 流程 评审 分支 发布""".split()
    ),
    "Communication": tuple(
        """answer answers reply replies response responses tone language english chinese explain
        explanation emoji emojis concise brief preamble conclusion summary formal casual 回答 回复 语言
        中文 英文 语气 解释 结论 铺垫 简洁""".split()
    ),
}

EMOTIONS: dict[str, str] = {
    # label -> regex alternation; order decides ties (frustration outranks the rest)
    "frustrated": r"frustrat\w*|annoy\w*|ugh+|argh+|wtf|fed up|sick of|doesn't work|does not work|"
    r"not working|still broken|waste of time|useless|烦死|烦人|气死|崩溃|受不了|又不行|还是不行|无语|郁闷",
    "negative": r"sad|upset|worried|worry|anxious|afraid|scared|tired|exhausted|lonely|depressed|hurt|"
    r"disappointed|stressed|angry|miserable|terrible|awful|难过|伤心|担心|焦虑|害怕|失望|孤独|生气|沮丧",
    "positive": r"happy|glad|awesome|amazing|love|loved|excited|exciting|thankful|grateful|proud|"
    r"wonderful|fantastic|enjoy\w*|inspir\w*|relieved|delighted|开心|高兴|快乐|太好了|棒|感谢|兴奋|满意|幸福",
}

# ---------------------------------------------------------------- routes and intents

DEEP_CUES = re.compile(
    r"\b(?:exactly|word for word|verbatim|the details|in detail|specifics|what (?:exactly )?did "
    r"(?:i|you|we) (?:say|write|tell|type)|(?:my|your|the) exact words|exact (?:words|wording|quote))\b"
    r"|原话|具体|细节|详细|一字不差|逐字|原文|怎么说的",
    re.IGNORECASE,
)
MEDIUM_CUES = re.compile(
    r"\b(?:what happened|recap|overview|summari[sz]e|summary|catch me up|remind me|what have we|"
    r"what did we (?:do|discuss|talk about|decide)|so far|last time|yesterday|last (?:week|month|year|night)|"
    r"ago|how long|(?:when|where|what|how|who|why|which) (?:did|was|were|had)\b)\b|^\W*when\b"
    r"|回顾|总结|发生了什么|概括|进展|聊过|讨论过|上次|之前|那次|当时|什么时候|昨天|上周|上个月|去年|前天",
    re.IGNORECASE,
)
GREETING = re.compile(
    r"^\s*(?:(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|night))\b"
    r"|你好|您好|嗨|哈喽|早上好|晚上好|下午好|早安|晚安)",
    re.IGNORECASE,
)
CORRECTION_CUE = re.compile(
    r"^(?:no|nope|not quite|wrong)\b[,.!]*\s*(?:actually|in fact|rather)\b|^correction\b|\bI meant\b"
    r"|^actually\b|^(?:不对|不是的|错了|更正)|我(?:的意思)?是说",
    re.IGNORECASE,
)
FEEDBACK_CUE = re.compile(
    r"^(?:thanks|thank you|thx|perfect|good job|well done|that(?:'s| is) (?:right|correct|wrong|not "
    r"(?:it|right|what))|that (?:worked|helped|didn't work)|this (?:worked|helped)|not helpful)\b"
    r"|^(?:谢谢|多谢|感谢|不错|很好|太好了|完美|没用|不行|有用|没帮助)",
    re.IGNORECASE,
)
REQUEST_CUE = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|help me|i need you to|i want you to|let's|"
    r"write|create|make|build|fix|show|give|tell|explain|list|draft|generate|translate|summari[sz]e|"
    r"remind)\b|^(?:请|帮我|麻烦|给我|帮忙|能不能|可不可以|可以帮|你能)",
    re.IGNORECASE,
)
QUESTION_CUE = re.compile(
    r"[?？]\s*$|^(?:what|when|where|who|whom|whose|why|how|which|is|are|was|were|do|does|did|can|"
    r"could|should|would|will|have|has)\b|(?:吗|呢|么)\s*$|什么|怎么|为什么|哪|多少|是否",
    re.IGNORECASE,
)

# ---------------------------------------------------------------- extraction rules

# (pattern, English canonical) and (pattern, Chinese canonical): the wording the
# cognitiveStyle summary uses for each collaboration habit.
COGNITIVE_EN: tuple[tuple[str, str], ...] = (
    (r"\b(?:conclusions?|bottom line|the answer|tl;?dr)\s+first\b|\b(?:lead|start) with the "
     r"(?:conclusion|answer|bottom line)\b", "Conclusion first, then details"),
    (r"\bstep[- ]by[- ]step\b|\bone step at a time\b", "Step-by-step explanations"),
    (r"\bbig picture\b|\b(?:overview|high[- ]level (?:view|picture|summary)) first\b", "Big picture first"),
    (r"\bbe (?:concise|brief|succinct|terse)\b|\bkeep (?:it|answers|responses|replies|things) "
     r"(?:short|brief|concise)\b|\b(?:concise|short|brief|succinct) (?:answers|responses|replies|"
     r"explanations)\b|\bget (?:straight )?to the point\b(?! where)", "Concise answers"),
    (r"\bno fluff\b|\bskip the (?:preamble|intro|fluff|small talk)\b|\bno (?:long )?(?:preamble|intro)s?\b",
     "No long preamble"),
    (r"\b(?:show|give) me the code first\b|\bcode first\b", "Code first, then explanation"),
    (r"\b(?:concrete )?examples? first\b|\bwith (?:concrete )?examples\b", "Concrete examples"),
    (r"\bexplain (?:the )?why\b|\bexplain (?:your|the) reasoning\b", "Explain the reasoning"),
    (r"\bbullet(?:ed)? (?:points|lists?)\b", "Bullet points"),
    (r"\bchallenge my (?:ideas|assumptions)\b|\bpush back\b|\bdevil's advocate\b", "Challenge assumptions"),
)
COGNITIVE_ZH: tuple[tuple[str, str], ...] = (
    (r"先给结论|先说结论|结论先行|先讲结论|直接给结论", "先给结论"),
    (r"不要(?:太?长的?|过多的?)?铺垫|少铺垫|别铺垫|不要废话|别废话|直奔主题|直接说重点", "不要长铺垫"),
    (r"一步一步|分步骤|逐步讲|按步骤", "一步一步讲解"),
    (r"先(?:讲|给|说)(?:整体|大局|大方向|全局)", "先讲整体，再讲细节"),
    (r"(?:回答|回复|解释|说明|表达)[^，。,]{0,4}(?:简洁|简短|简明|精简)|(?:简洁|简短)(?:一点|一些|些)?(?:地)?"
     r"(?:回答|回复|说)|言简意赅", "回答简洁"),
    (r"先(?:给|上|贴)代码|直接给代码", "先给代码，再解释"),
    (r"多举例|举例说明|给(?:个|些)?例子", "多举例子"),
    (r"分点|列要点|用要点|列表形式", "分点列出"),
)


@dataclass(frozen=True)
class Rule:
    """One signal: a pattern with the named groups ``v`` (the cue) and ``x`` (what it is about).

    ``template`` builds the fact line: ``{V}`` is the cue in the third person and
    capitalised, ``{v}`` the cue as written, ``{x}`` the object with its pronouns
    turned to the third person, ``{xv}`` the object with its first verb conjugated,
    ``{X}`` a whole first-person clause turned into a third-person one, ``{raw}``
    the object untouched (instructions keep their "me").

    ``cues`` are what the pattern cannot match without: one of these lower-case
    words (English) or substrings (Chinese). A clause holding none of them skips
    the regex, which keeps extraction cheap; the regex itself is compiled on its
    first use, which keeps start-up cheap.

    ``unless`` voids a match whose statement holds it (the statement: from the
    clause's start, or from the match's own subject when another comes before it,
    to the first break after the object): "以前" or "去年" says what held once, not
    what holds now.
    """

    category: str
    cues: tuple[str, ...]
    source: str
    confidence: float
    template: str
    section: str | None = None  # the profile section a clear signal feeds
    negates: bool = False  # the object is no longer true (correction of old facts)
    unless: str = ""
    value: bool = False  # the object is a value, no content word needed ("I'm 38": "Is 38 years old")
    timed: bool = False  # a plan: only with the time it is for ("I'm flying to Tokyo next Friday")

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source, re.IGNORECASE)

    @cached_property
    def void(self) -> re.Pattern[str] | None:
        return re.compile(self.unless) if self.unless else None


# the people close to the user, as Chinese names them ("我女儿", "我老公")
_KIN_ZH = (r"老婆|老公|妻子|丈夫|太太|先生|女朋友|男朋友|妈妈|爸爸|母亲|父亲|儿子|女儿|孩子|宝宝|姐姐|妹妹|哥哥|弟弟"
           r"|爷爷|奶奶|外公|外婆|家人|室友")
# what one is allergic to ("青霉素", "猫毛"; not "这个", "什么")
_ALLERGEN_ZH = r"(?!这|那|它|什么|啥)[^，,。；;！？不对]{1,20}?"


def _rule(category: str, cues: str, pattern: str, confidence: float, template: str, section: str | None = None,
          negates: bool = False, unless: str = "", value: bool = False, timed: bool = False) -> Rule:
    return Rule(category, tuple(cues.split("|")), pattern, confidence, template, section, negates, unless, value, timed)


_ADVERBS = r"(?:(?:really|much|generally|also|do|definitely|strongly|still|totally|absolutely|kind of|kinda|" \
    r"just|personally|genuinely|truly)\s+){0,2}"
# the subject opens a clause: "Everyone we love was there" says nothing about liking
_LEAD = r"(?:^|(?<=[,;:(])\s*|\b(?:and|but|so|because|though|although|honestly|personally|also|plus|now|still|actually|these\s+days|nowadays|" \
    r"lately)\s+)"
_SUBJECT = _LEAD + r"(?:(?:i|we|the user|user)\s+)" + _ADVERBS
# "I now work at ...", "I just moved to ...": an adverb between the subject and the verb
_NOW = r"(?:(?:now|currently|still|also|actually|just|recently|finally|officially)\s+)?"
# "I'm an idiot", "I'm a terrible cook": a judgement of oneself, no job
_SELF_JUDGED = (r"idiot|moron|dummy|dumbass|fool|loser|failure|disaster|klutz|noob|clown|imbecile|genius|terrible|"
                r"awful|horrible|lousy|hopeless|bad|poor|decent|pretty")
# "I'm vegetarian": a diet or a condition that is part of who one is
_DIETS = r"vegetarian|vegan|pescatarian|pescetarian|celiac|coeliac|diabetic|lactose|gluten|teetotal"
# conditions one lives with ("I have asthma"): a cue for the health rule, and what it reads
_CONDITIONS = (r"asthma|diabetes|epilepsy|migraines?|adhd|autism|arthritis|celiac disease|crohn's disease|crohn's|ibs|"
               r"hypertension|high blood pressure|anxiety|depression|psoriasis|eczema|lupus|hypothyroidism|a heart condition|"
               r"sleep apnea|tinnitus|dyslexia|ms|multiple sclerosis|endometriosis|pcos|long covid|a pacemaker")
# "I can't have dairy", "I avoid caffeine": what one eats or drinks, when no verb of eating says so
# (plain words, one a cue each: the rule below runs only on a clause that names one)
_FOODS = ("gluten|wheat|dairy|lactose|milk|cheese|egg|eggs|soy|nuts|peanut|peanuts|shellfish|seafood|fish|pork|beef|meat|"
          "sugar|sugars|salt|carbs|carbohydrates|caffeine|caffeinated|coffee|decaf|alcohol|booze|wine|beer|liquor|sweets|"
          "chocolate|garlic|onion|onions|sesame|msg|soda|sodas|fodmap|fodmaps|nightshades|spicy|fried|processed|junk|"
          "halal|kosher")
# the clause opens with its subject ("Sadly I can't eat gluten"), not "the one thing I can't eat"
_LEAD_SAID = r"(?:" + _LEAD + r"|\b(?:since|sadly|unfortunately)\s+)"
_SUBJECT_SAID = _LEAD_SAID + r"(?:i|we|(?:the )?user)\s+(?:(?:also|still|really|generally|strictly|just|now|actually|" \
    r"personally|honestly|absolutely|totally|simply|definitely|literally|basically|pretty much)\s+){0,2}"
# "I can't eat right now", "I cannot eat another bite", "I only drink on weekends", "I can't drink and
# drive": eating at a time, a place or an amount, no thing eaten; "... for two weeks", "... until the
# surgery": a thing not eaten for a while only
_NOT_EATEN = (
    r"(?!(?:it|that|this|them|those|these|one|anything(?!\s+(?:with|containing|made with))|something|everything|"
    r"nothing|much|more|less|anymore|any\s*more|another|enough|so|too|very|out|in|at|on|with|without|before|after|"
    r"during|when|whenever|while|until|till|if|unless|because|since|alone|here|there|right|now|today|tonight|yet|"
    r"fast(?!\s+food)|quickly|slowly|late|early|properly|well|like|again|or|and|around|near|outside|inside|once|"
    r"twice|every|each|for|to|as|by|a|an|the|my|your|his|her|our|their|me|you|him|us|lots?|half|normally|"
    r"regularly|often|straight)\b)"
    r"(?![^.!?;]*\b(?:until|till|tomorrow|yet|this\s+(?:week|month|year)|for\s+(?:a|an|one|two|three|a\s+few|"
    r"a\s+couple\s+of|several|\d+)\s+(?:more\s+)?(?:days?|weeks?|months?|hours?))\b)"
)
# a food as the thing itself ("dairy products", "spicy food"), not what names another ("coffee shops")
_FOOD = (r"(?:(?:all|any|most|anything with|foods? with|foods? containing)\s+)?(?:[\w'-]+\s+)?(?:" + _FOODS
         + r")(?:-\w+)*(?:\s+(?:products|food|foods|drinks|beverages|items))?"
         r"(?=\s*$|\s*[,.;:!?)]|\s+(?:and|or|but|so|after|before|in|at|on|during|when|whenever|because|since|as|"
         r"for|if|unless|these|now|any\s*more|completely|entirely|altogether|mostly|where|wherever|like|too|"
         r"though|although|lately)\b)")
_ROLES_EN = r"(?:manager|boss|wife|husband|partner|sister|brother|mom|mother|dad|father|son|daughter|" \
    r"best friend|friend|colleague|teammate|mentor|roommate|girlfriend|boyfriend|tech lead|lead)"
# the roles one has one of at a time: "my new boss" is another boss than the one before
_ONE_AT_A_TIME_EN = r"(?:manager|boss|wife|husband|partner|mentor|roommate|girlfriend|boyfriend|tech lead|lead|therapist)"
# a relative or someone close, of whom a line says where they live or what they do ("My mom lives in Chicago")
_PEOPLE_EN = (r"(?:(?:older|younger|little|big|baby|twin|oldest|youngest|eldest|step|best)\s+)?(?:mom|mum|mother|dad|father|"
              r"parents|wife|husband|partner|sister|brother|son|daughter|grandma|grandmother|grandpa|grandfather|aunt|"
              r"uncle|cousin|friend|girlfriend|boyfriend|fianc[eé]e?|roommate|boss|manager|sibling)")
_PEOPLE_CUES = ("mom|mum|mother|dad|father|parents|wife|husband|partner|sister|brother|son|daughter|grandma|grandmother|"
                "grandpa|grandfather|aunt|uncle|cousin|friend|girlfriend|boyfriend|fianc|fiance|fiancee|roommate|"
                "boss|manager|sibling")
_JOB_WORDS = "|".join(sorted(JOBS, key=len, reverse=True))
_PETS_EN = (r"(?:cat|dog|puppy|kitten|parrot|rabbit|bunny|hamster|guinea\s+pig|horse|pony|tortoise|turtle|snake|lizard|"
            r"gecko|ferret|goldfish|fish|bird|budgie|canary|chicken|goat|pig)")
# a time of one day only: "I go swimming tomorrow" is no habit
_ONCE = r"(?![^,.;!?]*\b(?:tomorrow|tonight|today|next|this|later|right now)\b)"
# how often or since when: "I usually play tennis", "I now use emacs"
_HABIT_ADV = r"(?:(?:usually|often|regularly|sometimes|occasionally|still|also|now|mostly|normally|typically|nowadays)\s+)?"

# a person's name where a rule reads one: capitalised as written (the rules' regexes ignore case:
# "my husband is allergic to shellfish" names nobody), and not a pronoun, a nationality, a
# faith or a language ("She is my sister", "My mother is Brazilian", "My wife is Catholic")
_NAME_EN = (
    r"(?!(?:He|She|They|It|This|That|Who|Not|American|British|English|Irish|Scottish|Welsh|Canadian|Mexican|"
    r"Brazilian|Argentinian|Argentine|Chilean|Colombian|Peruvian|Venezuelan|Cuban|Spanish|Portuguese|French|"
    r"German|Italian|Dutch|Belgian|Swiss|Austrian|Swedish|Norwegian|Danish|Finnish|Icelandic|Polish|Czech|"
    r"Slovak|Hungarian|Romanian|Bulgarian|Serbian|Croatian|Russian|Ukrainian|Greek|Turkish|Israeli|Iranian|"
    r"Persian|Iraqi|Syrian|Lebanese|Egyptian|Moroccan|Algerian|Tunisian|Nigerian|Ghanaian|Kenyan|Ethiopian|"
    r"Somali|Indian|Pakistani|Bangladeshi|Nepali|Chinese|Japanese|Korean|Vietnamese|Thai|Filipino|Filipina|"
    r"Indonesian|Malaysian|Australian|Asian|African|European|Arab|Arabic|Latino|Latina|Hispanic|Catholic|"
    r"Jewish|Muslim|Buddhist|Hindu|Sikh|Mormon|Protestant|Orthodox|Atheist|Agnostic)\b)(?-i:[A-Z][a-z]+)"
)

# the languages one speaks, as written ("French and German", "fluent Spanish")
_LANGUAGE_LEVEL = r"(?:(?:fluent|a little|a bit of|some|basic|conversational|native|decent|good|broken)\s+)?"
_LANGUAGES_EN = (_LANGUAGE_LEVEL + r"(?-i:[A-Z])[a-z]+(?:(?:,\s*(?:and\s+)?|\s+and\s+|\s+or\s+)" + _LANGUAGE_LEVEL
                 + r"(?-i:[A-Z])[a-z]+)*")
_MONTH_NAMES = (r"(?-i:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|"
                r"Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)")

# "I hate mornings", "I love lazy Sundays", "I'm a morning person": a time liked or disliked, a
# preference though none of its words says anything on its own
TIMES_LIKED = re.compile(r"(?:(?:early|late|lazy|rainy|quiet|slow|busy|long|cold|dark|sunny)\s+)?(?:mornings|afternoons|"
                         r"evenings|nights|weekends|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)"
                         r"|(?:morning|night|evening)\s+(?:person|people)", re.IGNORECASE)

# "I live in Berlin with my partner Jonas": who the user lives or works with, a fact of its own
# (not "broke up with my girlfriend Anna")
WITH_MY_EN = re.compile(r"(?<!\bup )(?<!\bout )\bwith\s+my\s+(?P<v>" + _ROLES_EN + r")\s+(?P<x>[A-Z][a-z]+)\b")

# "Don't give up!", "Never had the chance", "Always here for you": talk, not a rule for the assistant
_NOT_AN_INSTRUCTION = (
    r"(?!(?:worry|mind|bother|be sorry|apologi[sz]e|forget|give up|quit|let|miss|lose|stress|panic|hesitate|"
    r"be (?:scared|afraid|shy|hard|too hard|so hard)|here|there|happy|glad|welcome|proud|a|an|the|so|been|had|"
    r"was|were|got|went|did|thought|knew|saw|felt|made|gone|feel|think|know|have|care|get|see|really|even|"
    r"remember|understand|believe|like|want|need)\b)(?!\w+ed\b)"
)

RULES_EN: tuple[Rule, ...] = (
    _rule("correction", "actually|fact|rather", r"^(?:no|nope|not quite|wrong)\b[,.!]*\s*(?P<v>actually|in fact|rather)\b,?\s*(?P<x>.+)",
          0.9, "{X}"),
    _rule("correction", "correction", r"^(?P<v>correction)[:,]\s*(?P<x>.+)", 0.9, "{X}"),
    _rule("correction", "meant", r"\bI\s+(?P<v>meant)\s+(?P<x>.+)", 0.85, "{V} {x}"),
    # what the user says no longer holds takes back what said it did: "I don't have a dog
    # anymore", "I'm not a vegetarian anymore", "I'm not allergic to peanuts after all"
    _rule("correction", "more|anymore", r"\b(?:i|we)\s+(?P<v>don't|do not)\s+(?P<w>[a-z]+)\s+(?P<x>.+?)\s+any\s*more\b",
          0.85, "Doesn't {w} {x} anymore", negates=True),
    _rule("correction", "more|anymore", r"\b(?:the )?user\s+(?P<v>doesn't|does not)\s+(?P<w>[a-z]+)\s+(?P<x>.+?)\s+any\s*more\b",
          0.85, "Doesn't {w} {x} anymore", negates=True),
    _rule("correction", "more|anymore|longer", r"\b(?:i'm|i am|we're|we are|(?:the )?user is)\s+(?P<v>not)\s+(?P<x>.+?)\s+any\s*(?:more|\s+longer)\b",
          0.85, "Is no longer {x}", negates=True),
    _rule("correction", "all", r"\b(?:i'm|i am|we're|we are|(?:the )?user is)\s+(?P<v>not)\s+(?P<x>.+?)\s+after\s+all\b", 0.85, "Is not {x}",
          negates=True),
    _rule("correction", "longer", r"\b(?:i'm|i am|we're|we are|(?:the )?user is)\s+(?P<v>no longer)\s+(?P<x>.+)", 0.85, "Is no longer {x}",
          negates=True),
    _rule("correction", "longer", r"\b(?:i|we)\s+(?P<v>no longer)\s+(?P<w>\w+)\s+(?P<x>.+)", 0.85, "No longer {w3} {x}",
          negates=True),
    # "I no longer smoke", "I don't drink anymore": a habit given up, said without its object
    _rule("correction", "longer|anymore|more", r"\b(?:i|we)\s+(?:no longer|don't|do not)\s+(?P<x>smoke|vape|drink)"
          r"(?:\s+any\s*more)?\s*(?:$|[,.;!?])", 0.85, "No longer {xv}", negates=True),
    _rule("correction", "longer", r"\b(?:the )?user\s+(?P<v>no longer)\s+(?P<w>\w+)\s+(?P<x>.+)", 0.85, "No longer {w} {x}",
          negates=True),
    _rule("context", "my", r"\b(?P<x>" + _NAME_EN + r")\s+is\s+my\s+(?P<v>" + _ROLES_EN + r")\b", 0.85, "{x} is their {v}"),
    # ("My new boss is Olivia": the boss before is no longer; a new friend or sister is one more)
    _rule("context", "my", r"\bmy\s+(?:(?P<new>new)\s+(?=" + _ONE_AT_A_TIME_EN + r"\b))?(?P<v>" + _ROLES_EN
          + r")(?:'s name)?\s+is\s+(?:(?:named|called)\s+)?(?P<x>" + _NAME_EN + r")\b", 0.85, "{x} is their {v}"),
    # "My cat is called Miso", "My dog's name is Rex": a pet by its name (said so: "my dog is Happy" is no name)
    _rule("context", "named|called|name", r"\bmy\s+(?P<v>" + _PETS_EN + r")(?:'s\s+name\s+is|\s+is\s+(?:named|called))\s+"
          r"(?P<x>" + _NAME_EN + r")\b", 0.85, "{x} is their {v}"),
    _rule("preference", "favorite|favourite", r"\bmy\s+favou?rite\s+(?P<v>[\w\s-]{1,30}?)\s+(?:is|are)\s+(?P<x>.+)", 0.9,
          "Favorite {v}: {x}"),
    _rule("preference", "prefer|prefers", _SUBJECT + r"(?P<v>(?:would\s+)?prefers?)\s+(?P<x>.+)", 0.9, "{V} {x}"),
    _rule("preference", "like|likes|enjoy|want|hate|hates|stand|dislike|dislikes", _SUBJECT + r"(?P<v>(?:don't|do not|doesn't|does not)\s+(?:like|enjoy|want)|dislikes?|"
          r"hates?|can't stand|cannot stand)\s+(?P<x>.+)", 0.85, "{V} {x}"),
    _rule("preference", "like|likes|love|loves|enjoy|enjoys|adore|adores", _SUBJECT + r"(?P<v>likes?|loves?|enjoys?|adores?)\s+(?P<x>.+)", 0.85, "{V} {x}"),
    _rule("preference", "fan", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:a\s+)?(?:big\s+|huge\s+)?(?P<v>fan)\s+of\s+(?P<x>.+)", 0.85,
          "Is a fan of {x}"),
    _rule("constraint", "don't|do|never|always|avoid|stop", r"^(?:please\s+|and\s+|also\s+)?(?P<v>don't|do not|never|always|avoid|stop)\s+"
          + _NOT_AN_INSTRUCTION + r"(?P<x>.+)", 0.9, "{Vraw} {raw}"),
    _rule("constraint", "please", r"\bplease\s+(?P<v>don't|do not|never|always|avoid)\s+" + _NOT_AN_INSTRUCTION
          + r"(?P<x>.+)", 0.9, "{Vraw} {raw}"),
    _rule("constraint", "now|forward|future", r"^(?P<v>from now on|going forward|in (?:the )?future)\b,?\s*(?:please\s+)?(?P<x>.+)",
          0.85, "{Raw}"),
    _rule("behavior", "always|never|usually|tend", _SUBJECT + r"(?P<v>always|never|usually|tend to)\s+(?P<x>.+)", 0.7, "{V} {xv}"),
    # "My name is not Bob, it's Rob": the name it is, not the one it is not
    _rule("identity", "name", r"\bmy\s+(?P<v>name)\s+is\s+not\s+[^,.;!?]+[,;]\s*(?:it's|it is|but)\s+(?P<x>[^,.;!?]+)", 0.9,
          "Name is {x}", "personalContext"),
    _rule("identity", "name", r"\bmy\s+(?P<v>name)\s+is\s+(?!not\b)(?P<x>[^,.;!?]+)", 0.9, "Name is {x}", "personalContext"),
    # "Hi, I'm Sam, a product manager at Klarna", "I'm Sam.": a name said as an introduction
    _rule("identity", "hi|hello|hey", r"^(?:hi|hello|hey)(?:\s+there)?[,!.]?\s+(?P<v>i'm)\s+(?P<x>" + _NAME_EN + r")(?=\s*(?:[,.!]|$))",
          0.85, "Name is {x}", "personalContext"),
    _rule("identity", "i'm", r"^(?P<v>i'm)\s+(?P<x>" + _NAME_EN + r")\s*[.!]?$", 0.85, "Name is {x}", "personalContext"),
    _rule("identity", "i'm|am", r"\b(?:i'm|i am|(?:the )?user is)\s+(?P<v>an?)\s+(?!(?:bit|little|lot|tad|mess|wreck|few|couple|fan|big|"
          r"huge|total|complete|mix|kind|sort|part|natural|real|true|good|great|quick|slow|" + _SELF_JUDGED + r")\b)(?P<x>.+)", 0.9,
          "Is {v} {x}", "workContext"),
    _rule("identity", _DIETS, r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:strictly|fully|now|also|still|mostly|completely)\s+)?"
          r"(?P<x>(?:" + _DIETS + r")\b.*)", 0.9, "Is {x}", "personalContext"),
    _rule("identity", "allergic", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:very|severely|deathly|highly|mildly|slightly|also|really|only|"
          r"super)\s+)?(?P<v>allergic)\s+to\s+(?P<x>.+)", 0.9, "Is allergic to {x}", "personalContext"),
    _rule("identity", "allergy|allergies|intolerance|intolerances|sensitivity|sensitivities|celiac|coeliac",
          r"\b(?:i|(?:the )?user)\s+(?P<v>have|has)\s+(?P<x>(?:(?:an?\s+)?(?:(?:severe|mild|bad|serious)\s+)?"
          r"[\w-]+\s+(?:allerg(?:y|ies)|intoleran(?:ce|ces)|sensitivit(?:y|ies))|(?:celiac|coeliac)(?:\s+disease)?)\b.*)",
          0.9, "{V} {x}", "personalContext"),
    # "I'm intolerant to lactose", "I'm dairy intolerant" ("I'm lactose intolerant" is a diet above)
    _rule("identity", "intolerant", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:very|severely|mildly|slightly|also|really)\s+)?"
          r"(?P<x>intolerant\s+(?:to|of)\s+.+|(?:" + _FOODS + r")[\s-]+intolerant\b.*)", 0.9, "Is {x}", "personalContext"),
    # "I can't eat gluten", "I don't eat pork", "I only drink decaf", "I drink nothing but water"
    _rule("identity", "eat|eats|drink|drinks", _SUBJECT_SAID + r"(?P<v>(?:can't|cannot|can not|don't|do not|doesn't|does not|"
          r"won't|will not|try not to|only)\s+(?:eats?|drinks?)|(?:eats?|drinks?)\s+(?:only|nothing but|no))\s+" + _NOT_EATEN
          + r"(?P<x>.+)", 0.85, "{V} {x}", "personalContext"),
    # "I can't have dairy", "I avoid caffeine", "I stay away from sugar": a food or a drink held off
    _rule("identity", _FOODS, _SUBJECT_SAID + r"(?P<v>avoids?|try to avoid|tries to avoid|stays? away from|steers? clear of|"
          r"(?:can't|cannot|can not)\s+(?:have|tolerate|handle|digest|stomach)|(?:don't|do not|doesn't|does not)\s+"
          r"(?:do|tolerate|digest))\s+" + _NOT_EATEN + r"(?P<x>" + _FOOD + r".*)", 0.85, "{V} {x}", "personalContext"),
    _rule("identity", "married|engaged", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:happily|now|also|recently|newly|just)\s+)?"
          r"(?P<x>(?:married|engaged)\s+to\s+.+)", 0.9, "Is {x}", "personalContext"),
    # ... or no longer: "I'm single now", "we got divorced" (each takes back the other: claims.STATE_GROUPS)
    _rule("identity", "single|divorced|widowed", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:now|recently|newly|just)\s+)?"
          r"(?P<x>(?:single|divorced|widowed)(?![\w-]).*)", 0.9, "Is {x}", "personalContext"),
    _rule("identity", "got", r"\b(?:i|we)\s+(?:(?:just|recently|finally)\s+)?(?P<v>got)\s+(?P<x>(?:divorced|married|engaged)\b.*)",
          0.85, "Got {x}", "personalContext"),
    _rule("identity", "work|works|worked", r"\b(?:i|(?:the )?user)\s+" + _NOW + r"(?P<v>work(?:s|ed)?\s+(?:as|at|for|in"
          # "worked in the garden" is something done, not a job
          r"(?!\s+(?:the|my|our|their|a)\s+(?:garden|yard|backyard|allotment|vegetable patch)s?\b)))\s+(?P<x>.+)", 0.9, "{V} {x}",
          "workContext"),
    _rule("identity", "working", r"\b(?:i'm|i am|(?:the )?user is)\s+" + _NOW + r"(?P<v>working)\s+(?P<w>as|at|for)\s+(?P<x>.+)",
          0.9, "Works {w} {x}", "workContext"),
    # "I just joined Tidepool as a staff engineer": a new job (a club joined is no job: "as" must follow)
    _rule("identity", "joined", r"\b(?:i|(?:the )?user)(?:\s+have|'ve|\s+has)?\s+" + _NOW + r"(?P<v>joined)\s+"
          r"(?P<x>(?-i:[A-Z])[\w&.'-]*(?:\s+(?-i:[A-Z])[\w&.'-]*){0,3}\s+as\s+.+)", 0.9, "Joined {x}", "workContext"),
    # "I joined Acme last month": a new employer by its name alone (a network, an app, a club or a
    # group one joins is none: claims.JOINED_NAME)
    _rule("identity", "joined", r"\b(?:i|(?:the )?user)(?:\s+have|'ve|\s+has)?\s+" + _NOW + r"(?P<v>joined)\s+"
          r"(?P<x>" + JOINED_NAME + r"(?:\s+(?:" + JOINED_WHEN + r"))?)\s*(?:$|[,.;!])", 0.85, "Joined {x}", "workContext"),
    # "I quit my job at Globex", "I quit Globex": works there no more (claims: "Left" an employer)
    _rule("identity", "quit|left", r"\b(?:i|(?:the )?user)(?:\s+have|'ve|\s+has)?\s+" + _NOW + r"(?:(?:quit|left)\s+my\s+"
          r"(?:job|position|role)\s+(?:at|with)|quit)\s+(?P<x>" + JOINED_NAME + r")(?:\s+(?:" + JOINED_WHEN + r"))?\s*(?:$|[,.;!])",
          0.85, "Left {x}", "workContext"),
    # an age, one at a time: "I'm 38", "I'm 38 years old", "I just turned 39" (another number of
    # the same line takes the old one's place); not "I'm almost 40", "I'm 38 weeks pregnant"
    _rule("identity", "i'm|am|is|turned", r"\b(?:(?:i'm|i am|(?:the )?user is)\s+(?:now\s+)?|(?:i|(?:the )?user)\s+"
          r"(?:just\s+|recently\s+|finally\s+)?turned\s+)(?P<x>1[01]\d|[1-9]\d|(?:twenty|thirty|forty|fifty|sixty|seventy|"
          r"eighty|ninety)(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?)(?:\s+years?\s+old|\s+y/?o)?"
          r"(?:\s+(?:now|today|this\s+year|last\s+\w+|yesterday))?\s*(?:$|[,.;!])", 0.85, "Is {x} years old", "personalContext",
          value=True),
    # an allergy said in Spanish, French or German: kept in the words it was said in, as the
    # Chinese lines are ("Alérgico a los cacahuetes", "Allergique aux arachides"), up to the first break
    _rule("identity", "soy", r"(?:^|[,;]\s*|\b(?:y|pero|yo|también)\s+)(?:yo\s+)?(?:también\s+)?soy\s+"
          r"(?:muy\s+|también\s+|un\s+poco\s+)?(?P<v>al[eé]rgic[oa]s?)\s+(?P<w>(?:al|a)\s+)(?P<x>[^,.;!?]+)", 0.9, "{Vraw} {w}{raw}",
          "personalContext"),
    _rule("identity", "alergia", r"(?:^|[,;]\s*|\b(?:y|pero|yo|también)\s+)(?:yo\s+)?(?:también\s+)?tengo\s+(?:una\s+)?"
          r"(?P<v>alergia)\s+(?P<w>(?:al|a)\s+)(?P<x>[^,.;!?]+)", 0.9, "{Vraw} {w}{raw}", "personalContext"),
    _rule("identity", "allergique|allergiques", r"\bje\s+suis\s+(?:très\s+|aussi\s+|gravement\s+)?(?P<v>allergiques?)\s+"
          r"(?P<w>(?:aux|au|à\s+la|à)\s+|à\s+l')(?P<x>[^,.;!?]+)", 0.9, "{Vraw} {w}{raw}", "personalContext"),
    _rule("identity", "allergie", r"\bj'ai\s+(?:une\s+)?(?P<v>allergie)\s+(?P<w>(?:aux|au|à\s+la|à)\s+|à\s+l')(?P<x>[^,.;!?]+)", 0.9,
          "{Vraw} {w}{raw}", "personalContext"),
    _rule("identity", "allergisch", r"\bich\s+bin\s+(?:auch\s+|sehr\s+|stark\s+|leicht\s+)?(?P<v>allergisch)\s+"
          r"(?P<w>(?:gegen|auf)\s+)(?P<x>[^,.;!?]+)", 0.9, "{Vraw} {w}{raw}", "personalContext"),
    _rule("identity", "allergie", r"\bich\s+habe\s+(?:auch\s+)?(?:eine\s+)?(?P<v>allergie)\s+(?P<w>(?:gegen|auf)\s+)(?P<x>[^,.;!?]+)",
          0.9, "{Vraw} {w}{raw}", "personalContext"),
    _rule("identity", "habe", r"\bich\s+habe\s+(?:auch\s+)?(?:eine\s+)?(?P<x>\w+allergie)\b", 0.9, "{Raw}", "personalContext"),
    _rule("identity", "run|runs|own|owns|manage|manages|founded|co-founded|lead|leads",
          r"\b(?:i|we|(?:the )?user)\s+(?:also\s+)?(?P<v>runs?|owns?|manages?|founded|co-founded|leads?)\s+"
          r"(?P<x>(?:a|an|my|our|their)\s+.+)", 0.85, "{V} {x}", "workContext"),
    _rule("identity", "from|based", r"\b(?:i'm|i am|(?:the )?user is)\s+(?P<v>from|based in)\s+(?P<x>.+)", 0.9, "Is {v} {x}", "personalContext"),
    _rule("identity", "live|lives|grew", r"\b(?:i|(?:the )?user)\s+" + _NOW + r"(?P<v>lives?|grew up)\s+in\s+(?P<x>.+)", 0.85, "{V} in {x}",
          "personalContext"),
    # "Actually I moved to Lisbon last month": a new home, a place by its name
    _rule("identity", "moved|relocated", r"\b(?:i|we|(?:the )?user)(?:\s+have|'ve|\s+has)?\s+" + _NOW + r"(?P<v>moved|relocated)\s+"
          r"(?:back\s+)?to\s+(?P<x>(?:the\s+)?(?-i:[A-Z]).+)", 0.85, "{V} to {x}", "personalContext"),
    _rule("identity", "studying|majoring", r"\b(?:i'm|i am|(?:the )?user is)\s+(?P<v>studying|majoring in)\s+(?P<x>.+)", 0.8, "Is {v} {x}",
          "workContext"),
    _rule("identity", "have|has", r"\b(?:i|(?:the )?user)\s+(?:(?:also|still|now)\s+)?(?P<v>have|has)\s+(?P<x>(?:a|an|one|two|three|four|five|\d+)\s+(?:kids?|children|"
          r"sons?|daughters?|dogs?|cats?|pets?|brothers?|sisters?|siblings?)\b.*)", 0.8, "{V} {x}",
          "personalContext"),
    # "I have a golden retriever named Biscuit": a pet or a person of theirs by name, whatever its kind
    _rule("identity", "named|called", r"\b(?:i|we|(?:the )?user)\s+(?:(?:also|still|now)\s+)?(?P<v>have|has)\s+(?P<x>(?:a|an|one)\s+"
          r"(?:[\w-]+\s+){0,2}?[\w-]+\s+(?:named|called)\s+" + _NAME_EN + r")(?=\s*(?:$|[,.;!]|\s+(?:and|who|which|that)\b))",
          0.85, "{V} {x}", "personalContext"),
    # health: a condition one lives with, a medicine one takes, a pregnancy
    _rule("identity", _CONDITIONS, r"\b(?:i|(?:the )?user)\s+(?:(?:also|still)\s+)?(?P<v>have|has|suffer from|suffers from|"
          r"live with|lives with)\s+(?P<x>(?:(?:mild|severe|chronic|type\s+[12])\s+)*(?:" + _CONDITIONS + r")\b.*)", 0.9,
          "{V} {x}", "personalContext"),
    _rule("identity", "take|takes|on", r"\b(?:i|(?:the )?user)\s+(?:(?:also|still|now)\s+)?(?P<v>takes?|am on|is on|'m on)\s+"
          r"(?P<x>\d+(?:[.,]\d+)?\s*(?:mg|mcg|µg|g|ml|iu|units?)\b.+)", 0.9, "Takes {x}", "personalContext"),
    _rule("identity", "pregnant", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:now|currently)\s+)?(?P<x>(?P<v>pregnant)\b.*)", 0.9,
          "Is {x}", "personalContext"),
    # a relative's allergy or diet: "My daughter Mia is allergic to shellfish" (the user cooks for them)
    _rule("context", "allergic", r"\bmy\s+(?P<w>" + _ROLES_EN + r")(?:\s+(?P<n>" + _NAME_EN + r"))?\s+is\s+(?:(?:very|severely|"
          r"also)\s+)?(?P<v>allergic)\s+to\s+(?P<x>.+)", 0.85, "Their {w} is allergic to {x}", "personalContext"),
    # what a relative or someone close does or where they live, a fact about them ("Their mom lives in
    # Chicago"), never the user's own
    _rule("context", _PEOPLE_CUES, r"\bmy\s+(?P<w>" + _PEOPLE_EN + r"(?:\s+" + _NAME_EN + r")?)\s+(?:(?:now|also|still|currently)\s+)?"
          r"(?P<v>lives?\s+in|works?\s+(?:at|for|as)|is\s+an?(?=\s+(?:[\w-]+\s+){0,2}?(?:" + _JOB_WORDS + r")\b)"
          # "My mom moved to Boston": where they live now (takes back where they lived), a place by its name
          r"|(?:just\s+|recently\s+|finally\s+)?moved\s+(?:back\s+)?to(?=\s+(?-i:[A-Z])))\s+"
          r"(?P<x>.+?)(?=\s+(?:and|but)\s+(?:my|i|i'm)\b|$)", 0.85, "Their {w} {v} {x}"),
    # what the user gives up: "I stopped drinking coffee", "I quit smoking" (takes back what said they do)
    _rule("correction", "stopped|quit|gave", _SUBJECT + r"(?:(?:finally|recently|officially|completely)\s+)?(?P<v>stopped|quit|gave up)\s+"
          r"(?P<x>[a-z]+ing\b(?!\s+(?:when|because|after|before|since|so|and|but|for|until|till|at|in|by|while|as)\b)"
          r"(?![^,.;!?]*\b(?:for\s+(?:a|an|one|two|three|a\s+few|several|\d+)\s+(?:days?|weeks?|months?)|until|till)\b)[^,.;!?]*)",
          0.85, "{Vraw} {x}", negates=True),
    # habits and abilities: "I go running every morning", "I play guitar", "I drink coffee every
    # morning", "I smoke", "I speak French and German", "I'm afraid of heights", "I'm left-handed"
    _rule("behavior", "go|goes", _SUBJECT + _HABIT_ADV + r"(?P<v>go|goes)\s+" + _ONCE + r"(?P<x>(?:running|jogging|swimming|hiking|"
          r"climbing|bouldering|cycling|biking|skiing|surfing|dancing|bowling|fishing|camping|skating|rowing|walking|"
          r"kayaking|sailing|snowboarding|diving|horseback riding)\b.*|to\s+(?:the\s+)?(?:gym|yoga|pilates|church|mass|"
          r"therapy|choir|the\s+pool)\b.*)", 0.85, "{V} {x}", "personalContext"),
    _rule("behavior", "play|plays", _SUBJECT + _HABIT_ADV + r"(?P<v>plays?)\s+(?!(?:it|this|that|them|with|in|at|around|"
          r"along|for|a|an|some|any|my|your|his|her|our|their|safe|dumb|nice|fair|by|on|against|down|up|out|back|to|"
          r"together|hard|rough|well|badly|more|less|too|so|all|games?\s+with|the\s+(?:role|part|(?:long\s+)?game|victim|card|"
          r"field|odds|market))\b)" + _ONCE + r"(?P<x>.+)", 0.85, "{V} {x}", "personalContext"),
    _rule("identity", "eat|eats|drink|drinks", _SUBJECT_SAID + _HABIT_ADV + r"(?P<v>eats?|drinks?)\s+" + _NOT_EATEN
          + r"(?P<x>[^,.;!?]+?)(?:\s+again)?\s*(?=$|[,.;!?]|\s+(?:and|but|because|since|when)\b)", 0.85, "{V} {x}",
          "personalContext"),
    _rule("behavior", "smoke|smokes|vape|vapes", _SUBJECT_SAID + _HABIT_ADV + r"(?P<x>(?:smoke|vape)s?(?:\s+(?:cigarettes|"
          r"cigars|weed|a\s+pipe|socially|occasionally|sometimes|every\s+day|daily|a\s+pack\s+a\s+day))*)\s*"
          r"(?=$|[,.;!?]|\s+(?:and|but|because|since|when)\b)", 0.85, "{Xv}", "personalContext", value=True),
    _rule("identity", "speak|speaks", _SUBJECT + _HABIT_ADV + r"(?P<v>speaks?)\s+(?P<x>" + _LANGUAGES_EN + r")(?![\w'])", 0.85,
          "{V} {x}", "personalContext"),
    _rule("identity", "fluent", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:also|quite|pretty|fully)\s+)?(?P<x>fluent\s+in\s+"
          + _LANGUAGES_EN + r")(?![\w'])", 0.85, "Is {x}", "personalContext"),
    _rule("behavior", "afraid|scared|terrified|frightened", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:really|very|so|also|deathly|"
          r"terribly|a bit|a little|kind of|kinda|super|quite|always\s+been)\s+)?(?P<v>afraid|scared|terrified|frightened)\s+of\s+"
          r"(?!(?:it|that|this|them|him|her|you|what|how|losing|being|getting|doing|making|messing|failing|screwing)\b)"
          r"(?![^,.;!?]*\b(?:tomorrow|tonight|today|next|this|now)\b)(?P<x>[^,.;!?]+)", 0.85, "Is {v} of {x}", "personalContext"),
    _rule("identity", "handed|ambidextrous|colorblind|colourblind|blind|nearsighted|farsighted|shortsighted|sighted",
          r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:also|actually)\s+)?(?P<x>(?:left|right)[- ]handed|ambidextrous|"
          r"colou?r[- ]?blind|(?:near|far|short|long)[- ]?sighted)\b", 0.85, "Is {x}", "personalContext", value=True),
    # a birthday, a plan with its time: "My birthday is June 12", "I'm getting married in June", "I'm
    # flying to Tokyo next Friday", "I have a dentist appointment on May 3"
    _rule("identity", "birthday", r"\bmy\s+(?P<v>birthday)\s+is\s+(?:on\s+)?(?P<x>(?:" + _MONTH_NAMES + r")\s+\d{1,2}(?:st|nd|rd|th)?"
          r"|(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + _MONTH_NAMES + r"))\b", 0.9, "Birthday is {x}", "personalContext",
          value=True),
    _rule("goal", "getting|flying|moving|traveling|travelling|going|leaving|starting|visiting|heading|having|planning",
          r"\b(?:i'm|i am|we're|we are|(?:the )?user is)\s+(?:(?:finally|also|actually|officially)\s+)?(?P<v>getting\s+(?:married|"
          r"divorced)|flying|moving|traveling|travelling|going(?=\s+(?:to\s+(?-i:[A-Z])|on\s+(?:a\s+)?(?:trip|vacation|holiday|"
          r"honeymoon|cruise)|abroad|back\s+to))|leaving|starting(?!\s+to\b)|visiting|heading|planning(?=\s+(?:a|an|my|our)\s+"
          r"(?:[\w-]+\s+)?(?:trip|vacation|holiday|visit|honeymoon|move|wedding|party|getaway)\b)|having\s+(?:a|an|my|our)\s+"
          r"(?:baby|surgery|operation|wedding|party))\s+(?P<x>.+)", 0.85, "Is {v} {x}", "topOfMind", timed=True),
    _rule("goal", "appointment|interview|exam|surgery|flight|wedding|operation|checkup|check|recital|concert|conference|deadline|trip",
          r"\b(?:i|we)(?:\s+(?:also\s+|still\s+)?have|'ve\s+got|\s+have\s+got)\s+(?P<x>(?:an?|my|our)\s+(?:[\w'-]+\s+){0,3}?"
          r"(?:appointment|interview|exam|surgery|flight|wedding|operation|check-?up|recital|concert|conference|deadline|"
          r"trip)\b.*)", 0.85, "Has {x}", "topOfMind", timed=True),
    _rule("goal", "goal|dream|aim|ambition", r"\b(?:my|their|the user's)\s+(?:main\s+|long[- ]term\s+|ultimate\s+|big\s+)?(?P<v>goal|dream|aim|ambition)\s+is\s+"
          r"(?:to\s+)?(?P<x>.+)", 0.9, "{Vraw}: {x}", "topOfMind"),
    _rule("goal", "become", _SUBJECT + r"(?P<v>wants?|hopes?|aims?|plans?|would like)\s+to\s+become\s+(?P<x>.+)", 0.9,
          "{V} to become {x}", "topOfMind"),
    _rule("goal", "planning|aiming|hoping|working|saving", r"\b(?:i'm|i am|(?:the )?user is)\s+(?P<v>planning to|aiming to|hoping to|working towards?|saving (?:up )?for)"
          r"\s+(?P<x>.+)", 0.7, "{Vraw} {x}"),
    _rule("goal", "plan|plans|intend|intends", _SUBJECT + r"(?P<v>plans?|intends?)\s+to\s+(?P<x>.+)", 0.7, "{V} to {x}"),
    # a tool one works with, a skill one is learning: "I use vim for editing", "I'm learning Portuguese"
    _rule("preference", "use|uses", _SUBJECT + r"(?:(?:mostly|mainly|only|always|now|currently|nowadays)\s+)?(?P<v>uses?)\s+"
          r"(?!(?:it|this|that|them|these|those|one|some|any|the same|a lot|too much|less|more)\b)(?P<x>.+)", 0.8, "Uses {x}"),
    # "I switched to emacs", "I switched from vim to emacs": what is used now (what it was switched
    # from, given up, archives what said it)
    _rule("preference", "switched", _SUBJECT + r"(?P<v>switched)\s+(?:over\s+)?(?:from\s+(?P<g>[^,.;!?]+?)\s+)?to\s+(?P<x>.+)",
          0.8, "Switched to {x}"),
    _rule("goal", "learning", r"\b(?:i'm|i am|(?:the )?user is)\s+(?:(?:currently|now|also|still)\s+)?(?P<v>learning)\s+"
          r"(?!(?:to\s+(?:live|deal|cope|accept)|about|that|how|a lot|so much|more)\b)(?P<x>.+)", 0.8, "Is learning {x}", "topOfMind"),
    _rule("decision", "decided|agreed|settled", r"(?:\b(?:we|i|user|the user)(?:'ve|\s+have|\s+had)?\s+(?:finally\s+|just\s+|all\s+|also\s+)?|^)"
          r"(?P<v>decided|agreed|settled)\s+(?P<x>(?:to|on|upon|that|against)\b.+)", 0.9, "{Vraw} {x}"),
    _rule("decision", "chose|picked", r"\b(?:we|i|(?:the )?user)\s+(?:finally\s+)?(?P<v>chose|picked)\s+(?P<x>.+)", 0.85, "{Vraw} {x}"),
    _rule("decision", "let's", r"\blet's\s+(?P<v>go with|use|stick with|pick|choose|switch to|adopt)\s+(?P<x>.+)", 0.85,
          "{Vraw} {x}"),
    _rule("decision", "we'll|will", r"\bwe(?:'ll|\s+will)\s+(?P<v>go with|use|stick with|switch to)\s+(?P<x>.+)", 0.75,
          "{Vraw} {x}"),
    _rule("knowledge", "lesson|learned|turns|til|note",
          r"(?:^|\b(?:i|we|it)\s+(?:have\s+|'ve\s+)?)(?P<v>lesson(?: learned)?:|learned that|turns out|til|"
          r"note to self:?)(?!\w)\s*(?P<x>.+)", 0.7, "{X}"),
)

# What held once ("以前我在华为工作", "我在华为实习过", "当时我住在上海"), not what holds now;
# "周五以前" is a deadline, "过敏" an allergy, "过桥米线" noodles
_FORMER_ZH = (
    r"(?<![一二三四五六七八九十日天末底号点月年周\d])(?:以前|之前|从前)|曾经|曾(?=[在是住任做当])|当时|那时|那会儿?"
    r"|那阵子|小时候|(?:年轻|上学|读书|大学|高中|中学|小学)(?:的)?时|过去(?=[在是住曾几一两三十的])"
    r"|(?:原来|本来)(?=[在是住叫])|(?:工作|上班|任职|实习|住|待|呆|生活|做|当|喜欢|爱|讨厌|学|读|用|叫)过"
    r"(?![度于多分敏年来去程期滤渡夜节日桥])"
)
# a dated past ("去年我在深圳实习", "我是昨天到的上海"), unless it says since when ("从去年开始")
_DATED_ZH = (
    r"(?<![从自])(?:去年|前年|上个?月|上周|上星期|上礼拜|昨天|前天|昨晚"
    r"|[\d一二两三四五六七八九十几半]+个?(?:年|月|星期|礼拜|周|天)前|(?<!\d)(?:19|20)\d\d年)(?!开始|起|以来)"
)
_NOT_NOW_ZH = _FORMER_ZH + "|" + _DATED_ZH
# a stay, not a home: "我这几天住在酒店里"
_BRIEF_ZH = r"这几天|这两天|这周|这个星期|这段时间|这阵子|最近几天|暂住|临时"
# "我们明天再聊吧", "应该是周二吧": a plan for the talk or a guess, no correction to keep
_PLAN_ZH = r"明天|后天|今晚|待会|一会儿?|等会|等下|下次|改天|回头|晚点|稍后|再聊|吧"
# "我叫王小明", "我叫Tom": a name, the whole of its clause; not "我叫外卖了", "我叫了一辆滴滴",
# "我叫他过来", "我叫个车"
_NAME_ZH = (r"\s*(?P<x>(?![了过着外车的出滴快救醒人你您他她它我大家不没起来去上住个一份点些妈爸老朋同服错])"
            r"(?:[\u4e00-\u9fff]{2,4}(?<![了吧吗呢啊呀哦啦的过着])|[A-Z][A-Za-z'-]*(?:\s+[A-Z][A-Za-z'-]*){0,2}))"
            r"(?=\s*(?:$|[，,。.!！;；]))")
# "我是程序员", "我是一名医生", "我是做前端的": what one is; not the stress of "我是真的很累", the
# time of "我是昨天到的上海", nor a role towards someone ("我是你的老板")
_BEING_ZH = (r"(?!说|不|没|在|觉得|想|指|因为|为了|被|把|给|跟|和|从|来|去|到|坐|用(?!户)|刚|已经|真|很|挺|太|有点|非常|特别"
             r"|比较|蛮|超|好|最|更|还|也|都|就|才|又|这|那|第|怎么|什么|谁|哪|否|故意|专门|特意|随便|开玩笑|认真|问|对|错"
             r"|自己)(?:一[名个位])?(?P<x>(?![^，,。；;]*(?:你|您|他|她|它|今天|明天|昨天|前天|后天|刚才|刚刚|上午|下午|中午"
             r"|早上|晚上|那天|这次|一次))(?:(?:做|搞|学|干|教)[^，,。；;]+|[^，,。；;]*[^，,。；;的吧啊呀呢嘛吗了]))"
             r"(?=$|[，,。；;！!])")
# "住在酒店里", "住在医院": a stay
_STAY_ZH = r"(?![^，,。；;]*(?:酒店|宾馆|旅馆|民宿|青旅|旅社|招待所|客栈|医院|朋友家|同学家|亲戚家|别人家|这里|那里|这儿|那儿))"

RULES_ZH: tuple[Rule, ...] = (
    _rule("correction", "不对|不是的|错了|更正|纠正", r"^(?:不对|不是的|错了|更正|纠正一下)[，,。!！:：\s]*(?P<x>.+)", 0.9, "{raw}",
          unless=_PLAN_ZH),
    # "我是说" is as often "I mean" as "I meant": a correction only with what it takes back
    _rule("correction", "的意思是说", r"我的意思是说[，,：:]?\s*(?P<x>(?!你|您|他|她|我们|咱们).+)", 0.85, "{raw}", unless=_PLAN_ZH),
    _rule("correction", "是说", r"我是说[，,：:]?\s*(?P<x>[^。；;！!]*?不是[^。；;！!]+)", 0.85, "{raw}", unless=_PLAN_ZH),
    _rule("correction", "不再", r"我(?:现在|目前|如今|已经){0,2}(?P<v>不再)(?P<x>.+)", 0.85, "{v}{raw}", negates=True),
    _rule("context", "是我的", r"(?P<x>(?![你您他她它我这那谁])[\u4e00-\u9fff]{1,4}|[A-Z][a-z]+)是我的(?P<v>同事|老板|经理|朋友|"
          r"妻子|丈夫|老婆|老公|女朋友|男朋友|妈妈|爸爸|姐姐|妹妹|哥哥|弟弟|导师|老师|室友)", 0.85, "{raw}：{v}",
          unless=_NOT_NOW_ZH),
    _rule("preference", "最喜欢的", r"我最喜欢的(?P<v>[^，,。是]{1,10})是(?P<x>.+)", 0.9, "最喜欢的{v}是{raw}", unless=_NOT_NOW_ZH),
    _rule("preference", "不喜欢|讨厌|不爱|受不了|反感", r"我(?:也|真的|很|非常|特别|最|一直|向来){0,3}(?P<v>不喜欢|讨厌|不爱|受不了|反感)(?P<x>.+)",
          0.85, "{v}{raw}", unless=_NOT_NOW_ZH),
    _rule("preference", "喜欢|偏好|偏爱|热爱|习惯|倾向|爱", r"我(?:现在|目前|如今)?(?:也|真的|很|非常|特别|最|更(?!喜欢)|比较|一直|向来|还是){0,3}(?P<v>更喜欢|喜欢|偏好|偏爱|热爱|"
          r"习惯|倾向于|爱)(?P<x>.+)", 0.85, "{v}{raw}", unless=_NOT_NOW_ZH),
    # "我现在不喝茶了": no longer (what it takes back: "喜欢喝茶")
    # ("不用" is as often "need not": "我不用担心了")
    _rule("preference", "不吃|不喝|不抽|不玩", r"我(?:现在|目前|如今|已经|早就|也){0,2}不(?P<x>(?:吃|喝|抽|玩)(?![^，,。了]*[你您])"
          r"[^，,。了]+)了", 0.85, "不{raw}了", unless=_NOT_NOW_ZH),
    # "（我不喝茶了，）改喝咖啡": what took its place
    _rule("preference", "改", r"^我(?:现在|目前|如今|已经|就|也){0,2}改(?P<v>喝|吃|用|抽)(?P<x>[^，,。]+?)(?:了|啦)?(?=$|[，,。！!；;])",
          0.85, "改{v}{raw}", unless=_NOT_NOW_ZH),
    _rule("constraint", "不要|别|禁止|不准|不许", r"^(?:请|麻烦)?你?(?:以后)?都?(?P<v>不要|别|禁止|不准|不许|千万别|千万不要|永远不要|绝对不要)"
          r"(?!担心|着急|客气|介意)(?P<x>.+)", 0.9, "{v}{raw}"),
    _rule("constraint", "禁止", r"(?:^|[，,；;])\s*(?P<v>禁止)(?P<x>[^，,。]+)", 0.9, "{v}{raw}"),
    _rule("constraint", "以后|从现在|从今|总是|始终|一律", r"(?P<v>以后都|以后一律|以后请都|从现在开始都?|从今以后都?|总是|始终|一律)[，,]?\s*(?P<x>.+)",
          0.85, "{v}{raw}"),
    _rule("identity", "工作|上班|任职|实习", r"我(?:现在|目前|如今)?在(?P<x>[^，,。]+?)(?P<v>工作|上班|任职|实习)", 0.9, "在{raw}{v}",
          "workContext", unless=_NOT_NOW_ZH),
    _rule("identity", "叫", r"我叫" + _NAME_ZH, 0.9, "叫{raw}", "personalContext", unless=_FORMER_ZH),
    _rule("identity", "名字", r"我的名字(?:是|叫)" + _NAME_ZH, 0.9, "名字是{raw}", "personalContext", unless=_FORMER_ZH),
    _rule("identity", "来自", r"我(?P<v>来自)(?P<x>[^，,。]+)", 0.9, "{v}{raw}", "personalContext"),
    # "我对青霉素过敏", "我花粉过敏" (not "我对青霉素不过敏", nor "我女儿对花生过敏": hers, below)
    # (what one is allergic to is a value: "猫毛" is no content word, yet "对猫毛过敏" says much)
    _rule("identity", "过敏", r"我(?!的?(?:" + _KIN_ZH + r"))(?:也|一直|从小)?(?:对)?(?P<x>" + _ALLERGEN_ZH + r")(?P<v>过敏)", 0.9,
          "对{raw}过敏", "personalContext", value=True),
    # "我女儿小雨对花生过敏", "我儿子对猫毛过敏": a relative's allergy, a fact about them (it had
    # been learned as the user's own, "对女儿小雨对花生过敏", and written into the profile)
    _rule("context", "过敏", r"我的?(?P<v>(?:" + _KIN_ZH + r")(?:(?!也|一直|从小)[\u4e00-\u9fff]{1,3}?(?=(?:也|一直|从小)?对))?)(?:也|一直|从小)?对?"
          r"(?P<x>" + _ALLERGEN_ZH + r")过敏", 0.85, "{v}对{raw}过敏", value=True),
    _rule("identity", "住在", r"我(?:现在|目前|如今|一直|也){0,2}(?P<v>住在)" + _STAY_ZH + r"(?P<x>[^，,。]+)", 0.9, "{v}{raw}",
          "personalContext", unless=_NOT_NOW_ZH + "|" + _BRIEF_ZH),
    # "我搬到北京了", "我上个月搬到了北京": where one lives now, however long ago the move (not "我要搬到北京了")
    _rule("identity", "搬", r"我们?(?=[^，,。；;]*(?:了|啦|已经|刚))(?:已经|刚|最近|终于|也|去年|前年|今年|上个?月|上周|年初|年底|前几天"
          r"|前段时间|不久前){0,2}搬家?(?:到|去|回)了?(?P<x>(?!这|那|新家|新房)[^，,。了啦]+?)(?:了|啦)?(?=$|[，,。！!；;])", 0.85,
          "住在{raw}", "personalContext", unless=_FORMER_ZH),
    # "我上个月跳槽到了阿里巴巴": a new employer (not "我想跳槽到阿里巴巴")
    _rule("identity", "跳槽", r"我(?=[^，,。；;]*(?:了|啦|已经|刚))(?:已经|刚|最近|终于|也|去年|前年|今年|上个?月|上周|年初|年底"
          r"|前几天|前段时间|不久前){0,2}跳槽(?:到|去)了?(?P<x>(?!这|那)[^，,。了啦]+?)(?:了|啦)?(?=$|[，,。！!；;])", 0.85,
          "在{raw}工作", "workContext", unless=_FORMER_ZH),
    # "我从腾讯辞职了", "我已经从腾讯离职了": works there no more
    _rule("correction", "辞职|离职", r"我(?:已经|刚|最近|终于|上个?月|上周|去年)?从(?P<x>[^，,。]{1,20}?)(?P<v>辞职|离职)了", 0.85,
          "从{raw}{v}了", negates=True),
    # "我有两个孩子", "我有一只狗叫旺财": who and what the user has, with a name said
    _rule("identity", "我有|我家有|我也有|我还有", r"我家?(?:也|还)?有(?P<x>[一两二三四五六七八九十\d]+(?:个|只|条|位|名)[^，,。；;]{0,4}?"
          r"(?:孩子|儿子|女儿|小孩|宝宝|狗狗?|猫咪?|宠物|兔子|鹦鹉|仓鼠|兄弟姐妹|兄弟|姐妹|哥哥|姐姐|弟弟|妹妹)"
          r"(?:[，,]?(?:叫|名叫|名字叫)(?:[\u4e00-\u9fff]{1,4}|[A-Z][A-Za-z'-]*))?)(?=$|[，,。.!！;；])", 0.85, "有{raw}",
          "personalContext", unless=_NOT_NOW_ZH),
    # "我老婆叫李娜": the name of someone close (a fact about them)
    _rule("context", "叫", r"我的?(?P<v>老婆|老公|妻子|丈夫|太太|先生|女朋友|男朋友|妈妈|爸爸|母亲|父亲|儿子|女儿|姐姐|妹妹|哥哥|弟弟"
          r"|老板|室友|狗|猫)(?:的名字)?(?:叫|名叫)" + _NAME_ZH, 0.85, "{v}叫{raw}", unless=_FORMER_ZH),
    # "我不吃辣", "我不能喝酒": what the user does not eat or drink
    _rule("identity", "不吃|不喝|不能吃|不能喝", r"我(?:从来|从不|一直|也|都|基本|平时)?(?P<v>不能?(?:吃|喝))(?P<x>(?![^，,。；;]*[你您他她])"
          r"[^，,。；;了吧啊呀呢吗]{1,8})(?=$|[，,。.!！;；])", 0.85, "{v}{raw}", "personalContext", unless=_NOT_NOW_ZH,
          value=True),
    # "我每天早上六点跑步", "我每周去两次健身房", "我平时周末去游泳": a habit, how often said with it
    # (not "我明天早上跑步", "我想每天跑步", "以前我每天跑步")
    _rule("behavior", "每天|每周|每个|每晚|每早|每年|每月|每逢|平时|经常|通常|一般|常常",
          r"(?:^|[，,]\s*)我(?:也|还|都|一直)?(?P<x>(?:每(?:天|周|个?星期|个?礼拜|晚|个?周末|个?月|年|逢)|平时|经常|通常|一般|常常)"
          r"[^，,。；;！!？?吗呢吧]{0,12}?(?:跑步|慢跑|游泳|健身|锻炼|练瑜伽|做瑜伽|瑜伽|打篮球|打羽毛球|打网球|打乒乓球|踢足球|骑车"
          r"|骑自行车|散步|爬山|徒步|遛狗|冥想|读书|看书|练琴|弹琴|弹吉他|写日记|去健身房|喝咖啡|喝茶))(?=$|[，,。.!！;；])", 0.85,
          "{raw}", "personalContext", unless=_NOT_NOW_ZH + "|" + _PLAN_ZH),
    # "我生日是6月12号"
    _rule("identity", "生日", r"我的?(?P<v>生日)(?:是|在)?(?P<x>(?:\d{1,2}|[一二三四五六七八九十]{1,3})月(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
          r"(?:号|日))", 0.9, "生日是{raw}", "personalContext", value=True),
    # "我今年38岁", "我38岁了", "我今年三十八岁": an age, one at a time (not "我儿子5岁")
    _rule("identity", "岁", r"我(?:今年|现在|已经){0,2}(?P<x>\d{1,3}|[一二三四五六七八九]?十[一二三四五六七八九]?)(?:周)?岁", 0.85,
          "{raw}岁", "personalContext", unless=_NOT_NOW_ZH, value=True),
    _rule("identity", "我是|现在是|目前是", r"我(?:现在|目前)?是" + _BEING_ZH, 0.85, "是{raw}", "workContext", unless=_NOT_NOW_ZH),
    _rule("goal", "目标|梦想|理想", r"我的(?:长期|主要|最终)?(?P<v>目标|梦想|理想)是(?P<x>.+)", 0.9, "{v}是{raw}", "topOfMind",
          unless=_FORMER_ZH),
    _rule("goal", "成为", r"我(?P<v>想|希望|要|打算|立志)成为(?P<x>.+)", 0.9, "{v}成为{raw}", "topOfMind", unless=_FORMER_ZH),
    _rule("goal", "打算|计划|准备", r"我(?P<v>打算|计划|准备)(?P<x>.+)", 0.7, "{v}{raw}", unless=_FORMER_ZH),
    _rule("decision", "决定", r"(?:我们|我|大家)(?:最终|已经|最后|还是)?(?P<v>决定)了?(?P<x>.+)", 0.9, "{v}{raw}"),
    _rule("decision", "选择了|选了|定了", r"(?:我们|我)(?:最终|最后)?(?P<v>选择了|选了|定了)(?P<x>.+)", 0.85, "{v}{raw}"),
    _rule("decision", "就用|就选", r"就(?P<v>用|选)(?P<x>[^，,。]+?)吧", 0.8, "{v}{raw}"),
    _rule("knowledge", "教训|经验|记住", r"(?P<v>教训|经验|记住)[是：:，,]\s*(?P<x>.+)", 0.7, "{raw}"),
)

# "我现在住在北京", "我目前在腾讯工作", "我现在不喝茶了": a "now" that says what holds from now on,
# not a passing state ("我现在在开会")
DURABLE_NOW_ZH = re.compile(r"(?:现在|目前|如今)(?=(?:已经|也|还|都|就){0,2}(?:住在|在[^，,。；;]{1,20}?(?:工作|上班|任职|实习)"
                            r"|不再|不(?:吃|喝|抽|玩)[^，,。；;]*了|改(?:喝|吃|用|抽)|是|更(?:喜欢|爱)|偏好|偏爱))|刚刚(?=搬)")
# "I turned 39 today": a birthday says what holds from now on, not a passing state
DURABLE_NOW_EN = re.compile(r"\bturned\s+[\w-]+\s+today\b")
# "去年夏天，我在华为实习": a time before the clause it is the time of, no clause of its own
PAST_LEAD_ZH = re.compile(rf"^(?:{_NOT_NOW_ZH})[^了过，,。]{{0,3}}$")

# "Actually I'm a nurse", "Sorry, my sister is called Mila", "Oops, my bad, I work at Globex": a
# sentence said as a correction of the user's own words, before what it says anew
CORRECTING_LEAD_OPENS = frozenset("ac so oo oh my no wa we wr hm co ra ah sc in".split()) | {"i "}  # its first two letters
CORRECTING_LEAD_EN = re.compile(r"^(?:(?:no|nope|oh|oops|wait|ah|well|hmm+|my bad|not quite|wrong|sorry)\b[,.!]*\s*)*"
                                r"(?:actually|in fact|rather|correction|sorry|oops|my bad|scratch that"
                                r"|i meant(?:\s+to\s+say)?(?:\s+that)?)\b[,.:!]*\s*"
                                r"(?=(?:i|i'm|i've|my|we|we're|our)\b)", re.IGNORECASE)

# ... and in Chinese: "其实我是护士", "不对，我是护士", "抱歉，我妹妹叫米拉"
CORRECTING_LEAD_ZH_OPENS = frozenset("其实不错抱对说更纠哦噢")  # its first character
CORRECTING_LEAD_ZH = re.compile(r"^(?:(?:哦|噢|啊|嗯|对不起|抱歉|不好意思)[，,。!！\s]*)*(?:其实|实际上|不对|不是的|错了|我说错了|说错了"
                                r"|更正一下|更正|纠正一下|抱歉|不好意思|对不起)[，,。!！:：\s]*(?=我)")
CORRECTION_RULE_LEAD_ZH = re.compile(r"^(?:不对|不是的|错了|更正|纠正)")

# ... of which these say a correction outright (RULES_EN's first two): its line is a correction
CORRECTION_RULE_LEAD_EN = re.compile(r"^(?:no|nope|not quite|wrong)\b[,.!]*\s*(?:actually|in fact|rather)\b|^correction[:,]",
                                     re.IGNORECASE)

# "X, not Y" / "instead of Y" / "不是Y": the part a correction takes back
NEGATED_EN = re.compile(r"(?:^|,\s*|\s+)(?:not|rather than|instead of)\s+(?P<y>[^,.;!?]+)", re.IGNORECASE)
NEGATED_ZH = re.compile(r"(?:不是|而不是|不用|不再用|不再)(?P<y>[^，,。；;]+)")

# The next patterns read lower-cased text. Each comes with the cue words it
# cannot match without, so that most clauses are cleared by one set lookup.

# Temporary state (seed 002's "服务器现在在 3000 端口"): never a durable fact.
TEMPORARY_CUES = (
    "now", "moment", "today", "tonight", "morning", "afternoon", "evening", "present", "temporarily", "time",
    "running", "listening", "port", "现在", "目前", "今天", "刚才", "刚刚", "这会儿", "暂时", "此刻", "当前", "端口",
)
# copy-paste without insight (seed 002's "Error at /src/index.ts:42")
NOISE = re.compile(r"\.\w{1,5}:\d+|traceback|exception:|error at")
NOISE_CUES = (":", "traceback", "error")
HEDGE = re.compile(r"^(?:if|whether|unless|maybe|perhaps|do you|does|did you|would you|can you|could you|si|wenn|falls)\b"
                   r"|^(?:如果|要是|假如|是否)")
# The next three read a whole sentence whose first-person lines are not said as facts.
# A made-up situation ("Let's say I work as a pirate ...", "Pretend I'm a pirate", "Suppose I'm a
# lawyer"); lower-cased.
HYPOTHETICAL = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|now|hmm+|alright)[,\s]+)?"
    r"(?:(?:let's|lets|let us)\s+(?:say|pretend|imagine|assume|suppose|play|role[- ]?play)"
    r"|say\s+(?:that\s+)?(?=(?:i|i'm|we|we're|my)\b)|suppose|supposing|imagine|pretend|assume|assuming"
    r"|hypothetically|theoretically|in theory|what if|picture this|role[- ]?play(?:ing)?|for the sake of argument"
    r"|in a (?:hypothetical|parallel|fictional))\b|^(?:假设|想象一下)"
)
# Someone else's words about the user ("My brother told me: I work as a plumber.", "My sister said
# I'm a terrible cook", "According to my mom, I'm ..."). The reporter is someone named or described
# ("My brother", "Mom", "everyone"), never the user ("I told her I work as a nurse" is their own
# word) nor a phrase ("That said, I ..."); as written, for a name is capitalised.
REPORTED = re.compile(
    r"^(?:[A-Za-z]+,\s*)?"  # "Honestly, ..."
    r"(?:(?i:as|like)\s+)?"  # "As my dad always says, I'm ..."
    r"(?:(?i:my|his|her|their|our|your|the|a|an)\s+[\w' -]{1,40}?"
    r"|(?i:everyone|everybody|people|someone|somebody|he|she|they|you)"
    r"|(?!(?:That|This|Having|With|Needless|As|All|So|It|What|Who|Which|Enough)\b)[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
    r"\s+(?:(?i:always|often|once|just|also|keeps?|kept)\s+)?"
    r"(?i:told me|tells me|telling me|said|says|saying|claims?|claimed|thinks?|thought|believes?|believed|"
    r"insists?|insisted|jokes?|joked|wrote|writes|texted|swears?|swore)\b"
    r"(?:\s+(?i:that))?\s*[:,]?\s*[\"“']?\s*(?=(?i:i|i'm|i've|i'd|i'll|my|we|we're)\b)"
    r"|^(?i:according to)\b"
)
# A sentence that opens with a quote of first-person words and goes on about it ('"I live in Paris"
# is a line from the movie'): a quote, not the user's statement
QUOTED = re.compile(r"^\s*[\"“][^\"“”]{3,}[\"”]\s*[,:;-]?\s*\w")
# Someone else's words about the user in Chinese ("我朋友说我是个工作狂", "我妈总觉得我太瘦"), not
# the user's own ("我跟他说我是程序员")
REPORTED_ZH = re.compile(r"^(?:(?:我的?)?(?:朋友|妈妈|妈|爸爸|爸|老婆|老公|妻子|丈夫|同事|老板|领导|经理|姐姐|妹妹|哥哥|弟弟|家人"
                         r"|室友|同学|老师|女朋友|男朋友|儿子|女儿|父母)|他|她|他们|她们|大家|别人|有人|人家)(?:总是|总|老是|老|常常?"
                         r"|经常|一直|都)?(?:说|觉得|认为|以为|开玩笑说|笑)(?:过)?[，,:：]?\s*[“\"]?我")
# Taken back as said: "I'm a doctor, just kidding", "I work at Google lol jk"; lower-cased.
JOKE = re.compile(
    r"\b(?:just|only|i'm|i am|am)\s+(?:kidding|joking)\b|\bj/?k\b|\bnot really\W*$|\b(?:kidding|joking)\W*$"
    r"|(?:^|\s)/s\W*$"
)
# A sentence that is nothing but that takes back the one before it ("I'm a doctor. Just kidding!").
JOKE_ALONE = re.compile(r"^\W*(?:(?:lol|haha\w*|lmao|ok)\W+)*(?:(?:just|only)\s+)?(?:kidding|joking|jk|j/k|not really)\b"
                        r"\W*(?:(?:lol|haha\w*|lmao)\W*)?$")
COGNITIVE_CUES = (
    "first", "step", "picture", "concise", "brief", "succinct", "terse", "short", "point", "fluff", "preamble",
    "intro", "code", "example", "examples", "why", "reasoning", "bullet", "bulleted", "challenge", "push",
    "advocate", "overview", "lead", "start", "结论", "铺垫", "废话", "主题", "重点", "一步", "步骤", "逐步", "整体",
    "大局", "大方向", "全局", "简洁", "简短", "简明", "精简", "言简意赅", "代码", "举例", "例子", "分点", "要点", "列表",
)

# Filler an automatic writer wraps around a fact ("The user said that ...").
FILLER_PREFIX = re.compile(
    r"^(?:the\s+)?user\s+(?:has\s+)?(?:said|says|mentioned|mentions|stated|states|noted|notes|indicated|"
    r"indicates|explained|expressed|told me|reported)\s+(?:that\s+)?|^(?:it seems|apparently|note|fyi|btw)"
    r"\b[:,]?\s+(?:that\s+)?|^用户(?:说|表示|提到|提及|称|说过|指出)(?:过)?[：:，,]?\s*",
    re.IGNORECASE,
)
FILLER_TERMS: frozenset[str] = frozenset(
    {"user", "said", "say", "mention", "state", "note", "indicat", "explain", "express", "told", "report",
     "seem", "apparently", "fyi", "btw", "用户", "说", "表示", "提到", "提及", "称", "说过", "指出"}
)
