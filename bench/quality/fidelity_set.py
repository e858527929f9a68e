"""Write the fidelity set (``tests/fixtures/fidelity.jsonl``): sentences whose spans must come through translation.

Two origins, both licence-clean: sentences written here for each class (``written``; the ``currency``,
``operator``, ``math``, ``angle`` and ``range`` classes are written here only), and real sentences of the
repository's dev set (``data/corpus/dev.zh-en.tsv.gz``, only sources we may redistribute) with a span inserted
(``dev``). Each line is one JSON object:

``{"id", "class", "origin", "format", "source", "expect": [...], "glossary": {...}}``

``expect`` holds the exact strings the English must contain (the span itself, or the converted amount, or the
glossary's target term; for the ``currency`` and ``range`` classes the form ``handler.text.numbers`` writes:
``¥1,299``, ``30,000-50,000 yuan``, ``2018-2030``); for the ``html`` and ``markdown`` classes the output's markup
skeleton must equal the input's, and for ``no_chinese`` the output must equal the input. The set is deterministic
(a fixed seed): ``python -m bench.quality.fidelity_set`` rewrites the same file.
"""

from __future__ import annotations

import json
import random
import re

from build.corpus import REPOSITORY_CORPUS_DIR, dev_pairs
from handler.config import REPO_ROOT

OUT = REPO_ROOT / "tests" / "fixtures" / "fidelity.jsonl"
SEED = 12

URLS = [
    "https://example.com/docs?id=42",
    "http://www.gov.cn/zhengce/2024-03/15/content_123.htm",
    "https://github.com/example/project/issues/123",
    "https://zh.wikipedia.org/wiki/%E5%8C%97%E4%BA%AC",
    "https://api.example.org/v2/users?page=3&sort=desc",
    "www.example.cn/news",
    "https://docs.python.org/3/library/re.html#module-re",
    "ftp://files.example.net/pub/data.csv",
    "https://t.co/AbC123xyz",
    "https://example.com/a_(b)",
    "http://localhost:8080/translate",
    "https://shop.example.com/item/98765?color=red",
]
EMAILS = [
    "zhang.wei@example.cn",
    "li_na+news@mail.example.com",
    "support@example.org",
    "wang-fang@163.com",
    "admin@sub.domain.edu.cn",
    "chen2024@qq.com",
    "hr@company.com.cn",
]
MENTIONS = ["@zhangwei", "@OpenAI", "@li_na_88", "#AI", "#OpenSource", "#Python3", "@WHO", "#COVID19"]
PATHS = [
    "/etc/nginx/nginx.conf",
    "~/.bashrc",
    "./build/output.log",
    "C:\\Users\\wei\\Documents\\report.docx",
    "src/app/main.py",
    "/var/log/syslog",
    "../data/train.csv",
    "D:\\Projects\\demo\\app.exe",
    "/usr/local/bin/python3",
]
CODE = [
    "`pip install numpy`",
    '`git commit -m "fix"`',
    "`ls -la`",
    "`docker run -p 8080:80 nginx`",
    "`npm install --save react`",
    "`python -m venv .venv`",
    "`SELECT * FROM users;`",
    "`x = [i for i in range(10)]`",
    "`make test`",
]
EMOJI = ["😀", "👍", "🎉", "❤️", "🇨🇳", "👨‍👩‍👧", "🙏🏻", "🔥", "✅", "😂😂", "🚀"]
NUMBERS = [
    "3.14",
    "1,000",
    "50%",
    "138-0013-8000",
    "2:30",
    "10:45",
    "1.2.3",
    "99.9%",
    "2,345,678",
    "0.05",
    "400-820-8820",
    "12.5%",
    "18:00",
    "42",
    "2023",
]
LATIN = [
    "iPhone 15 Pro",
    "macOS Sonoma",
    "Python",
    "Tom",
    "Microsoft",
    "ChatGPT",
    "Node.js",
    "C++",
    "Wi-Fi",
    "GitHub",
    "Visual Studio Code",
    "Tesla Model 3",
    "Google Maps",
    "Excel",
    "PDF",
    "NASA",
    "Linux",
    "Jack",
    "Zoom",
    "USB-C",
]
AMOUNTS = [
    ("1.25亿元", "125 million yuan"),
    ("3万", "30,000"),
    ("5万亿美元", "5 trillion US dollars"),
    ("2.5千", "2,500"),
    ("800元", "800 yuan"),
    ("12亿", "1.2 billion"),
    ("1,200万", "12 million"),
    ("0.5万", "5,000"),
    ("4.8亿美元", "480 million US dollars"),
    ("30万人民币", "300,000 yuan"),
    ("6000万欧元", "60 million euros"),
    ("1.5万", "15,000"),
    ("2024年3月15日", "March 15, 2024"),
    ("2023年12月", "December 2023"),
    ("5月1日", "May 1"),
    ("2020年", "2020"),
    ("10月8日", "October 8"),
    ("2019年7月20日", "July 20, 2019"),
]
GLOSSARY = {
    "人工智能": "artificial intelligence",
    "机器学习": "machine learning",
    "区块链": "blockchain",
    "云计算": "cloud computing",
    "大数据": "big data",
    "可持续发展": "sustainable development",
    "气候变化": "climate change",
    "供应链": "supply chain",
    "疫苗": "vaccine",
    "联合国": "United Nations",
    "秘书长": "Secretary-General",
    "会员国": "Member States",
    "人权": "human rights",
    "大会": "General Assembly",
    "病毒": "virus",
    "医院": "hospital",
    "咖啡": "coffee",
    "电影": "movie",
}

WRITTEN: dict[str, list[str]] = {
    "url": [
        "请访问{}获取更多信息。",
        "详细说明见 {}。",
        "我把链接{}发给你了。",
        "官网是{}，欢迎访问。",
        "下载地址：{}",
        "你可以在{}找到文档。",
        "报名请打开{}填写表格。",
        "这篇文章的原文在{}。",
    ],
    "email": [
        "我的邮箱是{}，有问题请联系我。",
        "请把简历发到{}。",
        "如有疑问，请发邮件至 {}。",
        "他的工作邮箱是{}。",
        "请用{}登录系统。",
    ],
    "mention": [
        "请关注{}，了解最新消息。",
        "感谢{}的帮助！",
        "这条微博带了{}话题。",
        "我在推特上提到了{}。",
    ],
    "path": [
        "配置文件在{}里。",
        "请打开{}检查一下。",
        "日志保存在 {} 中。",
        "把文件复制到{}就可以了。",
        "运行程序前先编辑{}。",
    ],
    "code": [
        "运行{}之后再试一次。",
        "请先执行 {} 命令。",
        "在终端输入{}就可以了。",
        "如果出错，试试{}。",
        "我每次都用{}来检查。",
    ],
    "emoji": [
        "你好{}",
        "今天天气真好{}",
        "{}生日快乐！",
        "谢谢你的礼物{}",
        "我们赢了{}太好了！",
        "晚安{}",
    ],
    "number": [
        "价格是{}元。",
        "请拨打{}联系我们。",
        "会议下午{}开始。",
        "这个版本号是{}。",
        "增长率达到了{}。",
        "我们一共卖出了{}台。",
        "圆周率约等于{}。",
        "他的电话是{}。",
    ],
    "latin": [
        "{}是一家很有名的公司。",
        "我昨天买了{}。",
        "{}说他明天来。",
        "我们用{}写程序。",
        "请把文件转换成{}格式。",
        "你用过{}吗？",
        "{}很好用。",
        "我的朋友{}住在北京。",
    ],
    "amount": [
        "公司去年收入{}。",
        "这个项目投资了{}。",
        "会议定于{}举行。",
        "一共有{}参加了活动。",
        "他们在{}签署了协议。",
        "政府拨款{}用于救灾。",
    ],
}
NO_CHINESE = [
    "This is an English sentence.",
    "Hello, world!",
    "12345",
    "3.14159",
    "print('hello')",
    "for i in range(10): print(i)",
    "See https://example.com for details.",
    "The meeting starts at 2:30 p.m.",
    "OK",
    "C:\\Windows\\System32",
    "😀😀😀",
    "iPhone 15 Pro Max",
    "user@example.com",
    "-- comment --",
    "Don't panic.",
    "ls -la /tmp",
    "2024-03-15",
    "Version 1.2.3 (build 456)",
    "A + B = C",
    "#hashtag @mention",
]
HTML = [
    "<p>{a}</p>",
    '<b>{a}</b>，<a href="https://example.com/x">{b}</a>',
    "<ul><li>{a}</li><li>{b}</li></ul>",
    "<p>{a}<br>{b}</p>",
    '<img alt="{a}" src="pic.png">',
    "<p>运行<code>ls -la</code>查看文件。{a}</p>",
    "<table><tr><td>{a}</td><td>{b}</td></tr></table>",
    '<h1 title="{a}">{b}</h1>',
    "<div><p>{a}</p><p><em>{b}</em></p></div>",
    "<p>{a} &amp; {b}</p>",
    "<p>{a}</p><script>var s = '不要翻译';</script>",
    '<p><span class="note">{a}</span>{b}</p>',
    "<p>{a}<!-- 注释 --></p><pre>保持 原样</pre>",
    '<a href="mailto:a@example.com" title="{a}">{b}</a>',
    "<p><strong>{a}</strong></p>",
]
MARKDOWN = [
    "# {a}",
    "- {a}\n- {b}",
    "**{a}**",
    "[{a}](https://example.com/docs)",
    "| 列 | 值 |\n|---|---|\n| {a} | {b} |",
    "```\nprint('不要翻译')\n```\n\n{a}",
    "> {a}",
    "`make test` {a}",
    "1. {a}\n2. {b}",
    "## {a}\n\n{b}",
    "{a} *{b}*",
    "![图片](img/a.png) {a}",
    "- [ ] {a}",
    "{a}\n\n---\n\n{b}",
    "~~{a}~~ {b}",
]


# classes whose sentences are all written here, each with the strings its English must hold: a span at the start,
# in the middle and at the end, alone or with others, in prose and in technical text
WRITTEN_WITH_EXPECT: dict[str, list[tuple[str, list[str]]]] = {
    "currency": [
        ("价格从 ¥1,299 降到了 ¥999。", ["¥1,299", "¥999"]),
        ("这本书在网上卖￥45.80，书店里要￥60。", ["¥45.80", "¥60"]),
        ("$25的门票已经售罄了。", ["$25"]),
        ("这台相机在美国卖 $1,499，比国内便宜。", ["$1,499"]),
        ("机票往返€320，酒店每晚€95。", ["€320", "€95"]),
        ("伦敦的地铁单程票是£2.80。", ["£2.80"]),
        ("公司去年的研发投入达到$5亿。", ["$500 million"]),
        ("首轮融资￥3000万已经到账。", ["¥30 million"]),
        ("这款手机售价 US$799，折合人民币约5,700元。", ["US$799", "5,700 yuan"]),
        ("每张电影票30元，会员价25元。", ["30 yuan", "25 yuan"]),
        ("这笔订单总额为1,200美元。", ["1,200 US dollars"]),
        ("他们向基金会捐赠了500万欧元。", ["5 million euros"]),
        ("月租从HK$8,000涨到了HK$9,500。", ["HK$8,000", "HK$9,500"]),
        ("结账时一共是¥128，我付了现金。", ["¥128"]),
    ],
    "operator": [
        ("请安装 numpy>=2.1.3 后再运行。", ["numpy>=2.1.3"]),
        ("requirements文件里写的是django==4.2.7。", ["django==4.2.7"]),
        ("如果x!=0，就继续循环。", ["x!=0"]),
        ("把timeout=30写进配置文件。", ["timeout=30"]),
        ("条件i<=n不成立时退出。", ["i<=n"]),
        ("版本要求python>=3.9,<4.0，请先升级。", ["python>=3.9,<4.0"]),
        ("运行前设置 DEBUG=true 就能看到日志。", ["DEBUG=true"]),
        ("依赖写成requests~=2.31即可。", ["requests~=2.31"]),
        ("当a>b时，函数返回1。", ["a>b"]),
        ("2^10=1024，这个大家都知道。", ["2^10=1024"]),
        ("用--max-len=512参数可以限制长度。", ["--max-len=512"]),
        ("我们发现count+=1这一行没有执行。", ["count+=1"]),
        ("在网址后面加上?page=2就能翻页。", ["?page=2"]),
        ("这个检查是 len(items)>0，别写反了。", ["len(items)>0"]),
    ],
    "math": [
        ("著名的公式$E=mc^2$说明了质量和能量的关系。", ["$E=mc^2$"]),
        (r"公式 \(a^2+b^2=c^2\) 是勾股定理。", [r"\(a^2+b^2=c^2\)"]),
        ("设$x$为正整数。", ["$x$"]),
        (r"$f(x)=\sin x$是一个周期函数。", [r"$f(x)=\sin x$"]),
        ("我们要求解方程$$x^2-5x+6=0$$的根。", ["$$x^2-5x+6=0$$"]),
        (r"根据\[\int_0^1 x\,dx=\frac{1}{2}\]可以算出面积。", [r"\[\int_0^1 x\,dx=\frac{1}{2}\]"]),
        (r"当$n \to \infty$时，这个数列收敛。", [r"$n \to \infty$"]),
        (r"概率写作 \(P(A|B)\)，表示在B发生的条件下A的概率。", [r"\(P(A|B)\)"]),
        (r"把 $\alpha=0.05$ 作为显著性水平。", [r"$\alpha=0.05$"]),
        (r"矩阵的行列式记为$\det(A)$。", [r"$\det(A)$"]),
        (r"这道题的答案是$\sqrt{2}$，不是2。", [r"$\sqrt{2}$"]),
        (r"面积公式是\(S=\pi r^2\)，其中r是半径。", [r"\(S=\pi r^2\)"]),
    ],
    "angle": [
        ("请不要在文本里粘贴<img src=x onerror=alert(1)>这样的代码。", ["<img src=x onerror=alert(1)>"]),
        ("把<name>替换成你的名字。", ["<name>"]),
        ("这个方法返回List<String>类型。", ["List<String>"]),
        ("<br>标签表示换行。", ["<br>"]),
        ("模板里的<user_id>会被自动替换。", ["<user_id>"]),
        ("用Map<String, Integer>来保存每个词的次数。", ["Map<String, Integer>"]),
        ("段落要用</p>结束。", ["</p>"]),
        ("命令格式是 git checkout <branch>，请换成你的分支名。", ["<branch>"]),
        ('页面顶部有一个<div class="header">元素。', ['<div class="header">']),
        ("把 <script>alert('hi')</script> 当作普通文本显示。", ["<script>alert('hi')</script>"]),
        ("请用<b>加粗</b>表示重点。", ["<b>", "</b>"]),
        ("泛型写法Optional<T>在这里更清楚。", ["Optional<T>"]),
    ],
    "range": [
        ("规划期为（2018-2030 年）。", ["2018-2030"]),
        ("预计投资3-5万元。", ["30,000-50,000 yuan"]),
        ("市场规模将达到10～20亿美元。", ["1-2 billion US dollars"]),
        ("2020—2025年是关键的五年。", ["2020-2025"]),
        ("每年有5千-1万名游客来这里。", ["5,000-10,000"]),
        ("活动时间为3月1-5日。", ["March 1-5"]),
        ("这种花在4～6月开放。", ["April-June"]),
        ("房价在每平方米2万至3万元之间。", ["20,000 to 30,000 yuan"]),
        ("项目总投资1.5-2亿元，分三期建设。", ["150-200 million yuan"]),
        ("2019年至2021年，公司收入翻了一番。", ["2019 to 2021"]),
        ("每个座位的价格是¥300-500。", ["¥300-500"]),
        ("预计有30~50万人参加。", ["300,000-500,000"]),
        ("工资范围是8千到1.2万元。", ["8,000 to 12,000 yuan"]),
        ("这项研究覆盖了1990-2020年的数据。", ["1990-2020"]),
    ],
}


# issue 32, text that must stay as written: (source, the strings the output must hold byte for byte, format,
# DeepL's tag handling with its parameters, or nothing); the html rows go through the html format, the tagged rows
# through DeepL's tag handling (handler.text.markup.translate_tagged), whose XML output must also parse
_NO_TAGS: dict[str, object] = {}
_KEPT_PRODUCT = '<span translate="no">微信支付</span>'
KEPT_MARKUP: dict[str, list[tuple[str, list[str], str, dict[str, object]]]] = {
    "translate_no": [
        (f"<p>{zh}</p>{kept}", [kept], "html", _NO_TAGS)
        for zh, kept in [
            ("今天天气很好。", '<p translate="no">台北101大楼</p>'),
            ("我们明天去北京开会。", '<div translate="no">保持原文，不要翻译。</div>'),
            ("请在下面填写您的地址。", '<address translate="no">北京市朝阳区建国路88号</address>'),
            ("会议推迟到下周。", '<p translate=no title="标题">不要翻译<b>这一句</b>。</p>'),
        ]
    ]
    + [
        (f"<p>{before}{_KEPT_PRODUCT}{after}</p>", [_KEPT_PRODUCT], "html", _NO_TAGS)
        for before, after in [("请使用", "付款。"), ("我们支持", "和银行卡。"), ("", "现在可以在海外使用。")]
    ]
    + [
        (
            '<section translate="no">保持这一段。<p translate="yes">这一段要翻译。</p></section>',
            ['<section translate="no">保持这一段。<p translate="yes">', "</p></section>"],
            "html",
            _NO_TAGS,
        ),
        (
            '<p>图片说明：<img translate="no" alt="原文图片" src="a.png"></p>',
            ['<img translate="no" alt="原文图片" src="a.png">'],
            "html",
            _NO_TAGS,
        ),
    ],
    "notranslate": [
        (f"<p>{before}{kept}{after}</p>", [kept], "html", _NO_TAGS)
        for before, kept, after in [
            ("请打开", '<span class="notranslate">设置</span>', "页面。"),
            ("我们的产品叫", '<b class="brand notranslate">小米</b>', "，很受欢迎。"),
            ("", '<code class="notranslate">配置文件</code>', "在这个目录里。"),
            ("他的名字是", "<span class=notranslate>王小明</span>", "。"),
        ]
    ]
    + [
        (f"<h1>今天的新闻</h1>{kept}", [kept], "html", _NO_TAGS)
        for kept in [
            '<div class="notranslate">这一段保持中文。</div>',
            '<p class="a notranslate b">不要翻译这一句。</p>',
        ]
    ]
    + [
        (
            '<p>请打开<span class="notranslate">设置</span>页面。</p>',
            ['<span class="notranslate">设置</span>'],
            "html",
            {"tag_handling": "html"},
        ),
    ],
    "xml_inline": [
        (source, tags, "xml", {"tag_handling": "xml"})
        for source, tags in [
            ('按<x id="1"/>继续。', ['<x id="1"/>']),
            ('请点击<g id="1">保存</g>按钮，然后<x id="2"/>关闭窗口。', ['<g id="1">', "</g>", '<x id="2"/>']),
            (
                '<bpt id="1">&lt;b&gt;</bpt>重要<ept id="1">&lt;/b&gt;</ept>通知',
                ['<bpt id="1">&lt;b&gt;</bpt>', '<ept id="1">&lt;/b&gt;</ept>'],
            ),
            ('文件<ph id="1"/>已经保存到<ph id="2"/>。', ['<ph id="1"/>', '<ph id="2"/>']),
            ("<doc><title>用户手册</title><par>打开<b>设置</b>页面。</par></doc>", ["<doc><title>", "<b>", "</b>"]),
            (
                '<?xml version="1.0" encoding="UTF-8"?>\n<body>\n  <p>我们明天<x id="1"/>去北京。</p>\n</body>',
                ['<x id="1"/>'],
            ),
        ]
    ],
    "ignore_tags": [
        (source, kept, "xml", {"tag_handling": "xml", "ignore_tags": ["x", "keep"]})
        for source, kept in [
            ("请打开页面<x>设置</x>来配置系统。", ["<x>设置</x>"]),
            ("我们的产品<keep>微信支付</keep>支持海外使用。", ["<keep>微信支付</keep>"]),
            ("<doc><par>今天天气很好。</par><keep>保持原文。</keep></doc>", ["<keep>保持原文。</keep>"]),
            ("<doc><par>请联系<x>王经理</x>和<x>李经理</x>。</par></doc>", ["<x>王经理</x>", "<x>李经理</x>"]),
            (
                '<doc><par>文件名是<keep id="f">报告 &amp; 总结.docx</keep>。</par></doc>',
                ['<keep id="f">报告 &amp; 总结.docx</keep>'],
            ),
        ]
    ],
}


def _dev_sentences() -> list[str]:
    """Short dev sentences without Latin letters or digits (so that the inserted span is the only one)."""
    pairs = dev_pairs(REPOSITORY_CORPUS_DIR)
    keep = [p.zh for p in pairs if 6 <= len(p.zh) <= 32 and not re.search(r"[A-Za-z0-9０-９%@#`/\\]", p.zh)]
    return sorted(set(keep))


def _trim(sentence: str) -> str:
    return sentence.rstrip("。！？!?.,，；;：: ")


def build() -> list[dict[str, object]]:
    rng = random.Random(SEED)
    dev = _dev_sentences()
    rng.shuffle(dev)
    dev_iter = iter(dev)
    items: list[dict[str, object]] = []

    def add(kind: str, origin: str, source: str, expect: list[str], fmt: str = "text", **extra: object) -> None:
        number = sum(1 for item in items if item["class"] == kind) + 1
        items.append(
            {"id": f"{kind}-{number:03d}", "class": kind, "origin": origin, "format": fmt, "source": source}
            | {"expect": expect}
            | extra
        )

    pools: dict[str, list[str]] = {
        "url": URLS,
        "email": EMAILS,
        "mention": MENTIONS,
        "path": PATHS,
        "code": CODE,
        "emoji": EMOJI,
        "number": NUMBERS,
        "latin": LATIN,
    }
    dev_frames = {
        "url": "{s}，详见{x}。",
        "email": "{s}，请联系{x}。",
        "mention": "{x} {s}。",
        "path": "{s}，参见{x}。",
        "code": "{s}，然后运行{x}。",
        "emoji": "{s}{x}",
        "number": "{s}，编号{x}。",
        "latin": "{x}说：{s}。",
        "amount": "{s}，金额为{x}。",
    }
    for kind, pool in pools.items():
        frames = WRITTEN[kind]
        for index in range(24):
            span = pool[index % len(pool)]
            add(kind, "written", frames[index % len(frames)].format(span), [span])
        for index in range(12):
            span = pool[(index * 5 + 3) % len(pool)]
            add(kind, "dev", dev_frames[kind].format(s=_trim(next(dev_iter)), x=span), [span])
    for index in range(24):
        zh, en = AMOUNTS[index % len(AMOUNTS)]
        add("amount", "written", WRITTEN["amount"][index % len(WRITTEN["amount"])].format(zh), [en])
    for index in range(12):
        zh, en = AMOUNTS[(index * 7 + 2) % len(AMOUNTS)]
        add("amount", "dev", dev_frames["amount"].format(s=_trim(next(dev_iter)), x=zh), [en])
    # glossary: dev sentences that hold a term, plus written ones
    all_dev = dev_pairs(REPOSITORY_CORPUS_DIR)
    with_terms = sorted({p.zh for p in all_dev if any(term in p.zh for term in GLOSSARY) and len(p.zh) <= 60})
    rng.shuffle(with_terms)
    for sentence in with_terms[:30]:
        terms = {term: target for term, target in GLOSSARY.items() if term in sentence}
        # the longest terms win where they overlap (联合国大会: 联合国 and 大会 are both whole terms)
        expect = [
            target for term, target in terms.items() if not any(term in other and term != other for other in terms)
        ]
        add("glossary", "dev", sentence, sorted(expect), glossary=terms)
    written_glossary = ["我们公司专注于{}。", "{}正在改变世界。", "他在研究{}。", "请介绍一下{}。", "{}很重要。"]
    for index, (term, target) in enumerate(list(GLOSSARY.items()) * 1):
        add(
            "glossary",
            "written",
            written_glossary[index % len(written_glossary)].format(term),
            [target],
            glossary={term: target},
        )
    for text in NO_CHINESE:
        add("no_chinese", "written", text, [text])
    for fmt, templates in (("html", HTML), ("markdown", MARKDOWN)):
        for index in range(30):
            template = templates[index % len(templates)]
            a, b = _trim(next(dev_iter)), _trim(next(dev_iter))
            add(fmt, "dev", template.format(a=a, b=b), [], fmt=fmt)
    for kind, sentences in WRITTEN_WITH_EXPECT.items():
        for source, expect in sentences:
            add(kind, "written", source, expect)
    for kind, rows in KEPT_MARKUP.items():
        for source, expect, fmt, tags in rows:
            add(kind, "written", source, expect, fmt=fmt, **({"tags": tags} if tags else {}))
    return items


# --- subtitles: whole files, made here from dev sentences (make fidelity translates them; nothing is written) ---------
SUBTITLE_FILES = 12  # of each format
SUBTITLE_CUES = 14  # about, per file


def _cut_into_cues(sentence: str, pieces: int) -> list[str]:
    """A sentence cut into ``pieces`` cue texts, after a clause mark where one is near, else by length."""
    if pieces <= 1 or len(sentence) < 2 * pieces:
        return [sentence]
    cuts, at = [], 0
    for number in range(1, pieces):
        aim = len(sentence) * number // pieces
        marks = [m.end() for m in re.finditer(r"[，、：,]", sentence) if at < m.end() < len(sentence) - 1]
        near = [m for m in marks if abs(m - aim) <= 3]
        cut = near[0] if near else max(aim, at + 1)
        cuts.append(cut)
        at = cut
    bounds = [0, *cuts, len(sentence)]
    return [sentence[bounds[i] : bounds[i + 1]] for i in range(pieces)]


def _timestamp(milliseconds: int, fmt: str) -> str:
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    separator = "," if fmt == "srt" else "."
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


def subtitle_files() -> list[tuple[str, str, str]]:
    """``(name, text, format)``: SRT and WebVTT files of dev sentences, one to three cues a sentence, with italics,
    ``{\\an8}``, dialogue dashes, cue settings, a repeated line, a cue without Chinese, and (WebVTT) a header with
    a STYLE block and a NOTE; every third file has CRLF line endings."""
    rng = random.Random(SEED + 1)
    dev = [sentence for sentence in _dev_sentences() if sentence[-1] in "。！？"]
    rng.shuffle(dev)
    sentences = iter(dev)
    files = []
    for fmt in ("srt", "vtt"):
        for number in range(SUBTITLE_FILES):
            blocks: list[str] = []
            if fmt == "vtt":
                blocks += ["WEBVTT - 字幕\nKind: captions", "STYLE\n::cue {\n  color: yellow;\n}", "NOTE 不翻译的注释"]
            clock, cue = 1_000, 0
            while cue < SUBTITLE_CUES:
                style = rng.randrange(8)
                if style == 0:
                    texts = ["好的。"]  # repeated across files: the translation memory's case
                elif style == 1:
                    texts = ["♪ ♪"]
                elif style == 2:
                    texts = [f"- {next(sentences)}\n- {next(sentences)}"]
                else:
                    texts = _cut_into_cues(next(sentences), rng.choice((1, 2, 3)))
                for text in texts:
                    if rng.randrange(6) == 0 and "\n" not in text:
                        text = f"<i>{text}</i>"
                    elif rng.randrange(8) == 0 and fmt == "srt":
                        text = "{\\an8}" + text
                    end = clock + 800 + 90 * len(text)
                    timing = f"{_timestamp(clock, fmt)} --> {_timestamp(end, fmt)}"
                    if rng.randrange(4) == 0:
                        timing += " align:start position:10%" if fmt == "vtt" else " X1:100 X2:600 Y1:20 Y2:80"
                    label = f"{cue + 1}\n" if fmt == "srt" or rng.randrange(3) == 0 else ""
                    blocks.append(f"{label}{timing}\n{text}")
                    clock, cue = end + rng.choice((100, 200, 400)), cue + 1
                clock += rng.choice((0, 0, 3_000))  # now and then a pause: a new sentence
            text = "\n\n".join(blocks) + "\n"
            if number % 3 == 2:
                text = text.replace("\n", "\r\n")
            files.append((f"film-{number + 1:02d}.{fmt}", text, fmt))
    return files


# --- Word documents: made here from dev sentences with python-docx (make fidelity translates them) ------------------
WORD_FILES = 6
WORD_PARAGRAPHS = 10  # about, per file


def word_files() -> list[tuple[str, bytes]]:
    """``(name, .docx bytes)``: documents of dev sentences, each paragraph with a bold stretch (a few characters cut
    out of the middle of the sentence) and now and then an italic one, a 2x3 table, a header, a footer and a
    footnote (its part written by ``tests.word_samples.add_notes``)."""
    import io

    import docx

    from tests.word_samples import add_notes, note_reference

    rng = random.Random(SEED + 2)
    dev = [sentence for sentence in _dev_sentences() if 12 <= len(sentence) <= 60]
    rng.shuffle(dev)
    sentences = iter(dev)
    files = []
    for number in range(WORD_FILES):
        document = docx.Document()
        document.add_heading(next(sentences)[:10], level=1)
        for index in range(WORD_PARAGRAPHS):
            sentence = next(sentences)
            start = rng.randrange(2, len(sentence) // 2)
            end = start + rng.randrange(2, 5)
            paragraph = document.add_paragraph(sentence[:start])
            bold = paragraph.add_run(sentence[start:end])
            bold.bold = True
            bold.italic = rng.randrange(4) == 0
            paragraph.add_run(sentence[end:])
            if index == 0:
                note_reference(paragraph, "footnote")
        table = document.add_table(rows=2, cols=3)
        for row in range(2):
            for column in range(3):
                table.cell(row, column).text = next(sentences)[:8]
        section = document.sections[0]
        section.header.paragraphs[0].text = next(sentences)[:12]
        section.footer.paragraphs[0].text = next(sentences)[:12]
        add_notes(document, "footnotes", next(sentences))
        buffer = io.BytesIO()
        document.save(buffer)
        files.append((f"report-{number + 1:02d}.docx", buffer.getvalue()))
    return files


def main() -> int:
    items = build()
    OUT.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
    counts: dict[str, int] = {}
    for item in items:
        counts[str(item["class"])] = counts.get(str(item["class"]), 0) + 1
    print(f"{OUT}: {len(items)} sentences; " + ", ".join(f"{kind} {n}" for kind, n in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
