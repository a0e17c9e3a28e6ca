"""Build examples/sample.jsonl: a small, hand-written corpus with planted duplicates.

    .venv/bin/python examples/make_sample.py          # writes examples/sample.jsonl
    .venv/bin/python examples/check_sample.py         # checks its labels against the library

Every text below is original prose written for this sample. Each document is built from an
"original" by one named edit, so the label (`group`, `kind`) of every document says what its
author intended, independently of what the fingerprints say; `check_sample.py` then checks
the fingerprints against the labels.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import opencc

OUT = Path(__file__).with_name("sample.jsonl")

# --------------------------------------------------------------------------------------------
# Edits that make copies
# --------------------------------------------------------------------------------------------


def fullwidth(text: str) -> str:
    """Printable ASCII to its full-width form (U+FF01..U+FF5E), spaces to U+3000.

    NFKC folds every one of these back, so the copy is exact after normalisation.
    """
    out = []
    for ch in text:
        if ch == " ":
            out.append("\u3000")
        elif "!" <= ch <= "~":
            out.append(chr(ord(ch) - 0x21 + 0xFF01))
        else:
            out.append(ch)
    return "".join(out)


def fullwidth_alnum(text: str) -> str:
    """Only ASCII letters and digits to full width (for mixed Chinese/English text)."""
    return "".join(chr(ord(c) - 0x21 + 0xFF01) if c.isascii() and c.isalnum() else c for c in text)


def halfwidth_punctuation(text: str) -> str:
    """Chinese full-width punctuation that NFKC folds (，：；！？（）) to its ASCII form."""
    return text.translate(str.maketrans("，：；！？（）", ",:;!?()"))


def respace(text: str) -> str:
    """The same words with other whitespace: CRLF lines, doubled spaces, tabs, padding."""
    lines = text.replace(". ", ".  ").split("\n")
    return "  \r\n" + "\r\n\t".join(lines) + " \n\n"


def replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        sys.exit(f"edit not unique: {old!r} occurs {text.count(old)} times")
    return text.replace(old, new)


def to_traditional(text: str, config: str = "s2t") -> str:
    """OpenCC conversion: `s2t` changes characters only (t2s maps it back exactly); `s2twp`
    also swaps in Taiwan vocabulary (设置 -> 設定, 联系 -> 連絡), which t2s keeps."""
    return opencc.OpenCC(config).convert(text)


SHARE_FOOTER = "\n\nShare this article: Facebook | X | LinkedIn | Email\n© 2025 Example Media. All rights reserved."

# --------------------------------------------------------------------------------------------
# English: a local news site (two articles sharing the site's header and footer)
# --------------------------------------------------------------------------------------------

RIVERSIDE_HEADER = """Riverside Daily — Local news since 1998
Home | City | Business | Sports | Weather | Opinion | Subscribe

"""

RIVERSIDE_FOOTER = """

Riverside Daily is an independent, reader-funded newsroom. Got a tip? Write to newsroom@riverside-daily.example.com. Subscribe to the Morning Briefing and get the day's top local stories in your inbox before 7 a.m.
About us | Corrections policy | Advertise | Privacy | Terms"""

EN_NEWS_1 = RIVERSIDE_HEADER + """Council approves protected bike lanes for Harbor Street

By Dana Whitfield | City | 14 March 2025

The Riverside city council voted 7 to 2 on Tuesday night to build a protected bike lane along the full length of Harbor Street, ending a debate that has run for almost three years. The plan replaces one lane of curbside parking on each side of the street with a raised lane for bicycles and scooters, separated from traffic by a low concrete curb and a row of planters. It will run 2.4 kilometres, from the ferry terminal to the roundabout at Mill Road.

More than a hundred residents filled the public gallery, and the meeting ran past midnight. Parents from Harbor Street Elementary spoke in favour, saying their children cross four lanes of traffic to reach the school gate. Several shop owners near the fish market spoke against, arguing that their customers need the parking spaces and that deliveries would become harder.

Councillor Maria Okafor, who proposed the plan, said the city had counted 41 crashes involving cyclists on Harbor Street since 2021, two of them serious. "We are not taking the street away from anyone," she said. "We are making it possible for a twelve-year-old to ride to school."

To answer the concerns of businesses, the final version adds six loading bays and a new short-stay car park on the former bus depot site, with 80 spaces and a two-hour limit. Councillor Tom Brandt, who voted against, said the compromise came too late. "The merchants were asked for their opinion after the drawings were finished," he said.

Construction is expected to begin in early summer and take about five months. The work will be done in three sections so that at least one lane of traffic in each direction stays open. The project will cost an estimated 3.1 million dollars, of which 1.8 million comes from a regional transport grant.

The city will hold two information evenings at the Harbor Street community hall before work starts. Detailed drawings are available on the council website.""" + RIVERSIDE_FOOTER

EN_NEWS_2 = RIVERSIDE_HEADER + """Eastside library reopens after eighteen-month renovation

By Priya Raman | City | 14 March 2025

The Eastside branch of the Riverside Public Library reopened on Saturday after an eighteen-month renovation that added a children's wing, a makerspace and a quiet reading room on the upper floor. Hundreds of visitors queued in the rain before the doors opened at ten o'clock, and the librarians handed out free tote bags until they ran out shortly before noon.

The 1960s building had a leaking roof, no lift and heating that failed every winter. The renovation replaced the roof with a green roof planted with sedum, installed solar panels and a heat pump, and made every floor accessible. The old card catalogue cabinets were kept and now hold a community seed library, where residents can borrow a packet of tomato or bean seeds and return seeds from their own harvest in the autumn.

Head librarian Joan Mercer said the branch lent more than 90,000 items in its last full year before closing, and she expects that number to grow. "People told us they missed the space as much as the books," she said. "Students need somewhere warm and quiet to study, and older residents come for the newspapers and the company."

The makerspace has two 3D printers, a laser cutter, sewing machines and a small recording booth. Workshops for beginners start next month; places are free but must be booked at the front desk. The children's wing hosts story time every Tuesday and Thursday morning.

The renovation cost 6.5 million dollars, paid for by a bond approved by voters in 2022. Opening hours are 9 a.m. to 8 p.m. on weekdays and 10 a.m. to 5 p.m. on weekends.""" + RIVERSIDE_FOOTER

# --------------------------------------------------------------------------------------------
# English: two product pages of one shop
# --------------------------------------------------------------------------------------------

COPPERLEAF_HEADER = """Copperleaf Kitchen Supply
Shop | Coffee & Tea | Cookware | Knives | Sale | Account | Cart (0)
Free shipping on orders over $50 — 30-day returns

"""

COPPERLEAF_FOOTER = """

Shipping: orders placed before 2 p.m. ship the same working day. Standard delivery takes 2 to 4 working days. Returns: unused items can be sent back within 30 days in their original packaging for a full refund.
Customer service: help@copperleaf.example.com | Monday to Friday, 9:00 to 17:00
© Copperleaf Kitchen Supply. Prices include VAT."""

EN_PRODUCT_1 = COPPERLEAF_HEADER + """Home > Coffee & Tea > Kettles

Pourover Gooseneck Kettle, 1.0 L, brushed stainless steel
SKU CL-KT-1010 | In stock
Price: $64.00
Rating: 4.7 out of 5 (212 reviews)

A slim gooseneck spout gives you a steady, thin stream of water, so you can pour slowly and evenly over the coffee bed. The kettle is made from 18/8 stainless steel with a brushed finish that hides fingerprints, and it works on gas, electric, ceramic and induction hobs. A thermometer in the lid shows the water temperature from 40 to 100 °C, so you can stop heating at 92 to 96 degrees for light roasts without a separate probe.

Features
- Capacity 1.0 litre (fill line at 0.8 litre for pouring)
- Spout with a 7 mm opening for a controlled flow
- Heat-resistant walnut handle with a counterweight for balance
- Flat base, 14 cm, suitable for induction
- Weight 640 g empty

Care: wash by hand with warm water and a mild detergent. Descale every few weeks with a solution of citric acid if you live in a hard-water area. Do not put the lid thermometer in the dishwasher.

What customers say
"Pours beautifully and the thermometer is surprisingly accurate. I use it every morning for my V60." — Marta, verified buyer
"Heats quickly on my induction hob. The handel stays cool." — Ken, verified buyer

In the box: kettle, lid with thermometer, quick start guide.""" + COPPERLEAF_FOOTER

EN_PRODUCT_2 = COPPERLEAF_HEADER + """Home > Coffee & Tea > Grinders

Hand Coffee Grinder with conical steel burrs, 30 g
SKU CL-GR-2040 | In stock
Price: $89.00
Rating: 4.5 out of 5 (148 reviews)

Grind fresh beans anywhere with this compact hand grinder. Two stainless steel conical burrs crush the beans evenly, from a fine powder for espresso to a coarse grind for French press and cold brew. An external adjustment ring with 40 clicks makes it easy to return to the setting you like, and the aluminium body is light enough to take camping.

Features
- Hopper holds 30 g of beans, enough for two cups
- 40 click settings, about 25 microns per click
- Double bearings keep the burrs centred for a uniform grind
- Folding crank handle; catch cup with a silicone grip ring
- Weight 480 g

Care: brush out the burrs after use and never wash them with water. Once a month, run a dose of grinder cleaning tablets through it to remove coffee oils.

What customers say
"Consistent grind for pour-over, much better than my old blade grinder." — Ana, verified buyer
"Takes about forty seconds for 18 grams of espresso. Worth it." — Li, verified buyer

In the box: grinder, cleaning brush, cloth bag, quick start guide.""" + COPPERLEAF_FOOTER

# --------------------------------------------------------------------------------------------
# English: a personal blog post
# --------------------------------------------------------------------------------------------

EN_BLOG_1 = """Trail Notes — a running blog by Sam Ortega
Posts | Races | Gear | About

What my first 50 km trail race taught me
Posted on 2 June 2025 · 7 min read

I signed up for the Ridgeback 50K in January, mostly because a friend dared me to, and spent the next four months learning how little I knew about running long distances on rough ground. The race was last Saturday. I finished in 7 hours 48 minutes, somewhere in the middle of the field, tired, muddy and very happy. Here are the lessons I wish someone had told me in January.

1. Train on the terrain you will race on. My long runs were on the river path, which is flat and smooth. The race had 1,900 metres of climbing and long descents covered in loose stones. My quads were destroyed by kilometre 30. Next time I will do at least one long run a week on hills, and practise running downhill with short, quick steps.

2. Eat early and eat often. I planned to eat a gel every 45 minutes but skipped the first two because I felt fine. By the third hour I was dizzy and had to walk for a long time while my stomach caught up. Eating something small every half an hour, starting in the first hour, would have kept me steady.

3. Walking is not failing. Almost everyone walks the steep climbs in a trail ultra, even the fast runners. Power hiking with hands on the knees is quicker than jogging slowly uphill, and it saves your legs for the runnable sections.

4. Test everything before race day. New socks gave me a blister on my left heel. The vest I borrowed rubbed my shoulder raw. Nothing new on race day is an old rule for a reason.

5. Thank the volunteers. They stood on a windy ridge for ten hours to fill my bottles and tell me bad jokes. The aid station at kilometre 38, with boiled potatoes and salt, saved my race.

I am already looking at a 70 km race for next spring. If you have done one, tell me in the comments what changed for you between 50 and 70.

Tags: trail running, ultramarathon, race report
12 comments"""

# --------------------------------------------------------------------------------------------
# English: two recipes of one recipe site (same template, overlapping ingredients)
# --------------------------------------------------------------------------------------------

PANTRY_HEADER = """Weeknight Pantry — simple food from the cupboard
Recipes | Soups | Mains | Baking | Meal plans | Newsletter

"""

PANTRY_FOOTER = """

Did you make this recipe? Leave a rating and tell us how it went in the comments below. Nutrition values are estimates per serving.
Weeknight Pantry | About | Contact | Privacy"""

EN_RECIPE_1 = PANTRY_HEADER + """Red lentil and carrot soup with lemon

Prep 10 minutes | Cook 30 minutes | Serves 4 | Vegan

This is the soup I make when the fridge is almost empty. Red lentils cook quickly and break down into a thick, velvety base without any cream, and a squeeze of lemon at the end makes the whole pot taste bright. It keeps for four days in the fridge and freezes well.

Ingredients
- 2 tablespoons olive oil
- 1 large onion, chopped
- 3 carrots, peeled and diced
- 3 cloves garlic, crushed
- 1 teaspoon ground cumin
- 1/2 teaspoon smoked paprika
- 250 g red lentils, rinsed
- 1.2 litres vegetable stock
- 1 tin (400 g) chopped tomatoes
- juice of 1 lemon
- salt, pepper and a handful of parsley

Method
1. Warm the oil in a large pot over medium heat. Add the onion and carrots with a pinch of salt and cook for 8 minutes, stirring now and then, until the onion is soft.
2. Stir in the garlic, cumin and paprika and cook for one minute until fragrant.
3. Add the lentils, stock and tomatoes. Bring to the boil, then lower the heat and simmer for 20 minutes, until the lentils have collapsed and the carrots are tender.
4. Blend half of the soup with a stick blender, leaving the rest chunky, or blend it all if you prefer it smooth.
5. Season with salt, pepper and the lemon juice. Serve with chopped parsley and crusty bread.

Tip: if the soup thickens too much overnight, loosen it with a splash of water when you reheat it.

Nutrition per serving: 310 kcal, 17 g protein, 8 g fat, 44 g carbohydrate.""" + PANTRY_FOOTER

EN_RECIPE_2 = PANTRY_HEADER + """Chickpea and spinach curry in twenty-five minutes

Prep 10 minutes | Cook 15 minutes | Serves 4 | Vegan

A weeknight curry made almost entirely from tins and jars. Coconut milk gives it a rich sauce, the chickpeas make it filling, and a whole bag of spinach wilts in at the end. Serve it with rice, flatbread or a baked potato.

Ingredients
- 1 tablespoon coconut or sunflower oil
- 1 onion, thinly sliced
- a thumb of ginger, grated
- 2 cloves garlic, grated
- 2 tablespoons mild curry paste
- 2 tins (400 g each) chickpeas, drained
- 1 tin (400 ml) coconut milk
- 200 g baby spinach
- juice of half a lime
- fresh coriander to serve

Method
1. Fry the onion in the oil for 6 minutes until golden at the edges.
2. Add the ginger, garlic and curry paste and fry for two minutes, stirring so the paste does not catch.
3. Tip in the chickpeas and coconut milk, bring to a gentle simmer and cook for 10 minutes, crushing a few chickpeas against the side of the pan to thicken the sauce.
4. Stir in the spinach a handful at a time until it wilts.
5. Finish with the lime juice, taste for salt and scatter over the coriander.

Tip: a spoonful of peanut butter stirred in with the coconut milk makes the sauce even richer.

Nutrition per serving: 420 kcal, 14 g protein, 24 g fat, 36 g carbohydrate.""" + PANTRY_FOOTER

# --------------------------------------------------------------------------------------------
# English: two threads of one forum
# --------------------------------------------------------------------------------------------

EN_FORUM_1 = """HomeLab Forum › Networking › Wi-Fi and routers

Router drops Wi-Fi every evening around 8 pm — what am I missing?

Posted by kestrel_89 » Tue 20 May 2025, 21:14

Hi all, long-time lurker, first post. For about three weeks my home Wi-Fi has been dropping out every evening between roughly 8 and 10 pm. Devices stay connected to the network but nothing loads for 30 seconds to a couple of minutes, then it comes back. Wired devices on the same router seem fine, which makes me think it is not the internet connection itself.

Setup: ISP fibre modem in bridge mode, then my own dual-band router (about four years old, latest firmware), one mesh satellite upstairs. Roughly 25 devices: phones, two laptops, a TV, a games console and a bunch of smart plugs.

Things I have tried so far:
- rebooting everything (helps for one evening, then it starts again)
- changing the 5 GHz channel from auto to 36
- turning off band steering
- checking the router log, which shows a lot of 'DFS radar detected, switching channel' messages around the time of the drops

Any idea what could cause this? Is it worth replacing the router, or is there a setting I have missed?

Reply from netgnome » Tue 20 May 2025, 21:40

The DFS messages are your clue. Channels 52 to 144 on 5 GHz are shared with weather and airport radar, and when the router detects radar it must leave the channel and wait before using it again. If auto channel keeps picking a DFS channel in the evening, you get exactly what you describe. Pin the 5 GHz band to a non-DFS channel (36 to 48, or 149 to 165 if your region allows it) on both the router and the mesh satellite, and make sure the satellite backhaul is not set to auto either.

Reply from kestrel_89 » Tue 20 May 2025, 22:05

Thanks, I had set the router to 36 but the satellite backhaul was still on auto. Changing it now and will report back."""

EN_FORUM_2 = """HomeLab Forum › Storage › NAS and backups

Which drives for a 4-bay NAS used mostly for photo backups?

Posted by pixel_harbor » Wed 21 May 2025, 19:02

Hi all, I finally bought a 4-bay NAS to replace the pile of USB drives in my desk drawer. It will mostly hold family photos and videos (about 3 TB now, growing by maybe 500 GB a year), plus nightly backups from two laptops. I am trying to decide between four 4 TB drives in RAID 5 or two 8 TB drives in a mirror, leaving two bays free for later.

Questions:
- Are NAS-rated drives really worth the extra money over desktop drives for a box that is idle most of the day?
- Should I avoid SMR drives completely?
- Is RAID enough, or do I still need an off-site copy?

Reply from netgnome » Wed 21 May 2025, 19:30

RAID is not a backup. It protects you from one drive dying, not from deleting a folder by mistake, ransomware or a burst pipe. Keep at least one copy somewhere else, even if it is just a USB drive at a relative's house that you update monthly, or an encrypted cloud bucket.

For the drives: yes, avoid SMR in any RAID array, because rebuilds can take days and sometimes fail. Two 8 TB CMR drives in a mirror is the simpler start, and you can add a second pair later. NAS-rated drives are mostly about firmware that handles read errors sensibly inside an array and about vibration tolerance, and the price gap is small at these sizes.

Reply from pixel_harbor » Wed 21 May 2025, 20:12

That makes sense. Going with the mirror and a cloud copy of the photos folder. Thanks!"""

# --------------------------------------------------------------------------------------------
# English: short error pages (a few tokens; matched exactly or through their fingerprint)
# --------------------------------------------------------------------------------------------

EN_SHORT_404 = "404 — Page not found"
EN_SHORT_403 = "403 — Access denied"

# --------------------------------------------------------------------------------------------
# Chinese: a city newspaper, two articles with the same header and footer
# --------------------------------------------------------------------------------------------

JIANGCHENG_HEADER = "江城晚报 | 首页 | 本地 | 财经 | 体育 | 天气 | 评论\n\n"

JIANGCHENG_FOOTER = """

责任编辑：周敏　校对：李航
新闻热线：027-8888-0000　邮箱：news@jiangcheng.example.cn
关于我们 | 联系我们 | 广告服务 | 隐私政策"""

ZH_NEWS_1 = JIANGCHENG_HEADER + """地铁3号线北延段今日开通试运营

2025年3月14日　来源：江城晚报　记者 王晓东

本报讯 今天上午6时30分，地铁3号线北延段正式开通试运营。北延段全长8.6公里，新设车站5座，全部为地下站，从原终点站滨江公园站向北延伸至新城大道站。开通后，北部新城的居民进入中心城区的时间将缩短约20分钟。

首班车从新城大道站发出时，车厢里已经坐满了乘客。家住新城花园小区的刘女士说，她以前每天要先坐公交车到滨江公园站再换乘地铁，早高峰单程要一个多小时，“现在走路十分钟就能到站，孩子上学也方便多了”。

据市轨道交通集团介绍，北延段试运营初期，工作日早晚高峰行车间隔为4分30秒，平峰时段为7分钟，首末班车时间与全线保持一致。新开通的5座车站均设置了无障碍电梯和母婴室，并在出入口附近规划了共享单车停放区。

为方便乘客出行，公交部门同步调整了6条公交线路，新开2条接驳线，连接沿线的学校、医院和产业园区。交警部门提醒，开通初期车站周边车流量较大，请市民尽量选择步行或公共交通前往。

市轨道交通集团表示，试运营期间将根据客流变化及时调整运营方案，欢迎市民通过官方App和服务热线提出意见建议。""" + JIANGCHENG_FOOTER

ZH_NEWS_2 = JIANGCHENG_HEADER + """市图书馆试行夜间开放 周末延长至晚上十点

2025年3月14日　来源：江城晚报　记者 陈雨桐

本报讯 从下周一开始，市图书馆将试行夜间开放，工作日闭馆时间由晚上8点推迟到9点30分，周六、周日延长至晚上10点。这是市图书馆建馆以来第一次大幅延长开放时间。

市图书馆负责人介绍，近两年晚间到馆的读者明显增加，其中不少是下班后来自习的年轻人和准备考试的学生。“以前一到八点，阅览室里还有很多人没看完书，只能排队离开。”试行夜间开放后，二楼自习区和三楼社科阅览室将全部开放，少儿阅览室仍在晚上6点关闭。

为保障夜间服务，图书馆新招募了40名志愿者，协助开展借还书引导和秩序维护工作。自助借还机、电子阅览室和研讨间预约系统也将同步延长服务时间。馆内咖啡区营业至晚上9点。

不少读者对这一消息表示欢迎。在银行工作的赵先生说，他平时下班已经七点多，以前很少有机会来借书，“现在吃完饭还能过来看两个小时”。

图书馆表示，夜间开放将试行三个月，期间将统计到馆人数和读者反馈，再决定是否长期实行。""" + JIANGCHENG_FOOTER

# --------------------------------------------------------------------------------------------
# Chinese: two product pages of one online shop
# --------------------------------------------------------------------------------------------

QINGHE_HEADER = """青禾家居旗舰店 | 首页 | 全部商品 | 杯壶 | 餐具 | 收纳 | 会员中心 | 购物车
满99元包邮　7天无理由退换

"""

QINGHE_FOOTER = """

购物须知：下单后48小时内发货，默认发中通快递，偏远地区除外。收到商品后如有质量问题，请在7天内联系在线客服，我们将为您免费退换。
客服时间：每天9:00-22:00　青禾家居 版权所有"""

ZH_PRODUCT_1 = QINGHE_HEADER + """首页 > 杯壶 > 保温杯

青禾 316不锈钢真空保温杯 500ml 商务款
商品编号：QH-BW-0500　库存：有货
价格：¥89.00
月销 2300+　好评率 98%

产品介绍
杯身采用316医用级不锈钢内胆，双层真空结构，装入开水后6小时仍保持在70℃以上，12小时保冷。杯盖内置硅胶密封圈，倒置摇晃也不漏水，可以放心装进背包。外壳经过磨砂喷涂处理，手感细腻，不易留下指纹和划痕。

规格参数
容量：500ml
材质：内胆316不锈钢，外壳304不锈钢，杯盖PP
尺寸：直径7厘米，高度22厘米
重量：约290克
颜色：雾蓝、燕麦白、石墨黑

使用说明
首次使用前请用温水加少量食用碱清洗，并用开水烫洗一遍。不建议长时间盛装牛奶、果汁等饮品，不可放入微波炉或洗碗机。

买家评价
“保温效果很好，早上装的热水下午还烫嘴，颜色也好看。”——用户 j***8
“容量刚好，放在车上的杯架里正合适。”——用户 小***米""" + QINGHE_FOOTER

ZH_PRODUCT_2 = QINGHE_HEADER + """首页 > 杯壶 > 马克杯

青禾 手工窑变釉陶瓷马克杯 380ml 带盖带勺
商品编号：QH-MK-0380　库存：有货
价格：¥39.00
月销 1500+　好评率 97%

产品介绍
每一只杯子都由景德镇的手艺人拉坯成型，再经过1280℃高温烧制。窑变釉的颜色会随着温度自然流动，所以每只杯子的花纹都略有不同。杯口加厚圆润，喝起来很舒服；宽大的手柄可以放进三根手指，冬天捧在手里很暖和。

规格参数
容量：380ml
材质：高温陶瓷，杯盖为榉木
尺寸：口径8.5厘米，高度9.5厘米
重量：约350克
颜色：青瓷绿、月白、焦糖棕

使用说明
可以放入微波炉加热（请先取下木盖和金属勺），可用洗碗机清洗。木盖请手洗后及时晾干，避免长时间浸泡。

买家评价
“釉色比图片还漂亮，每天早上用它喝咖啡心情都很好。”——用户 a***5
“有点重，但质感很好，送给朋友当生日礼物了。”——用户 阿***七""" + QINGHE_FOOTER

# --------------------------------------------------------------------------------------------
# Chinese with English: two posts of one tech blog
# --------------------------------------------------------------------------------------------

TECHBLOG_HEADER = "技术小站 · 后端笔记\n首页 | 归档 | 标签 | 关于\n\n"

TECHBLOG_FOOTER = """

本文采用 CC BY-NC 4.0 许可协议，转载请注明出处。
上一篇 | 下一篇 | 返回首页"""

ZH_TECH_1 = TECHBLOG_HEADER + """用 Docker Compose 在一台服务器上部署 PostgreSQL 和 Redis

发布于 2025-04-08　阅读约 6 分钟

最近把个人项目从云数据库迁回了自己的 VPS，顺手整理了一下用 Docker Compose 同时部署 PostgreSQL 16 和 Redis 7 的过程，记录几个踩过的坑。

一、目录结构
我在 /srv/app 下放了 docker-compose.yml、一个 .env 文件和 data 目录。数据库密码只写在 .env 里，并且把 .env 加进了 .gitignore，避免不小心提交到 GitHub。

二、数据持久化
PostgreSQL 的数据目录一定要挂载到宿主机的 volume 上，否则容器一删数据就没了。我第一次测试时用了匿名 volume，执行 docker compose down -v 之后整个库都消失了，好在只是测试数据。Redis 如果只做缓存可以不开持久化；如果要存 session，建议打开 AOF。

三、健康检查和启动顺序
应用容器依赖数据库，但 depends_on 只保证启动顺序，不保证数据库已经可以连接。给 postgres 服务加上 healthcheck，用 pg_isready 检测，再在应用服务里写 condition: service_healthy，就不会出现应用启动时连不上数据库的报错了。

四、不要把端口暴露到公网
默认写法 ports: "5432:5432" 会把数据库端口直接暴露在公网上。只在内部网络使用时，去掉 ports，让应用通过 Compose 的默认网络用服务名 postgres 访问即可。需要本地调试时，可以改成 127.0.0.1:5432:5432，或者用 SSH 隧道。

五、备份
每天凌晨用 cron 执行一次 pg_dump，把备份文件压缩后上传到对象存储，保留最近 14 天。恢复演练至少要做一次，不然备份文件能不能用心里没底。

整体下来，这套配置在 2 核 4G 的机器上跑得很稳定，内存占用不到 1G。有问题欢迎在评论区交流。""" + TECHBLOG_FOOTER

ZH_TECH_2 = TECHBLOG_HEADER + """把数据服务从 Python 3.9 升级到 3.12 的记录

发布于 2025-05-20　阅读约 5 分钟

公司内部的数据处理服务一直跑在 Python 3.9 上，官方的安全更新快要结束了，趁着迭代间隙把它升级到了 Python 3.12。整体比预想的顺利，下面按时间顺序记一下遇到的问题。

一、先跑测试，再改代码
升级前先把 CI 的 Python 版本矩阵改成 3.9 和 3.12 同时跑，pytest 一共 1200 多个用例，第一轮在 3.12 上失败了 37 个。大部分失败来自第三方库版本太旧，而不是我们自己的代码。

二、依赖升级
numpy 从 1.21 升到 1.26，pandas 从 1.3 升到 2.1。pandas 2 里 DataFrame.append 已经被移除，需要改成 pd.concat；另外有几处链式赋值触发了 SettingWithCopyWarning，顺便改成了 .loc 写法。

三、distutils 被移除
Python 3.12 删除了标准库里的 distutils，有一个老脚本用它来比较版本号，改用 packaging.version 就解决了。

四、换用 uv 管理环境
以前用 pip 加 requirements.txt，安装一次要三分钟左右。这次试着换成了 uv，锁文件用 uv.lock，CI 里的依赖安装缩短到二十秒以内，本地新建虚拟环境也快了很多。

五、性能
同一批数据的处理时间从 42 分钟降到了 35 分钟左右，主要得益于 3.11 以后解释器本身的提速，我们没有做任何专门的优化。

总结：先有测试，升级就不可怕。下一步准备把类型检查从 mypy 的宽松模式切换到 strict 模式。""" + TECHBLOG_FOOTER

# --------------------------------------------------------------------------------------------
# Chinese: a recipe and a forum thread
# --------------------------------------------------------------------------------------------

ZH_RECIPE_1 = """家常菜谱 | 快手菜 | 汤羹 | 面食 | 烘焙

番茄炒蛋：酸甜下饭的十分钟快手菜

难度：简单　时间：10分钟　分量：2人份

番茄炒蛋几乎是每个人学会的第一道菜，但要做得鸡蛋嫩滑、汤汁浓郁，还是有一些小窍门。关键是鸡蛋和番茄分开炒，最后再合在一起。

食材
番茄 2个（约400克）
鸡蛋 3个
葱 1根
白糖 1小勺
盐 适量
食用油 2大勺

做法
1. 番茄顶部划十字，用开水烫30秒后去皮，切成小块。葱切成葱花，葱白和葱绿分开放。
2. 鸡蛋打散，加一小撮盐和一勺清水，搅打到起泡。加水可以让炒出来的鸡蛋更蓬松。
3. 锅里放油烧到七成热，倒入蛋液，等边缘凝固后用铲子轻轻推动，炒到八成熟就盛出来。
4. 锅里再加少许油，放入葱白炒香，然后加番茄块，中火翻炒到出汁。喜欢汤汁多一点的，可以加两勺清水。
5. 加入白糖和盐调味，倒回鸡蛋，翻炒均匀后撒上葱绿就可以出锅了。

小贴士
番茄要选熟透的，颜色越红越容易出沙。白糖不是为了做成甜口，而是用来中和番茄的酸味，喜欢酸一点的可以不放。

你做过这道菜吗？欢迎在下方留言分享你的做法。"""

ZH_FORUM_1 = """学而论坛 › 考研交流 › 经验分享

【求助】在职考研，每天只有三个小时，复习时间该怎么安排？

楼主：晚风与书　发表于 2025-06-03 22:17

各位前辈好，我本科是计算机专业，毕业两年，现在在一家软件公司做测试。今年决定考本专业的研究生，目标是本省的一所211。问题是工作日晚上下班到家已经快八点，每天能用来复习的时间最多三个小时，周末可以多一些。

目前的情况：
数学：复习全书刚看完第一遍，做题速度很慢，错题很多。
英语：单词背了两轮，阅读每周做四篇，正确率一半左右。
专业课（408）：只看了数据结构，计算机组成原理完全没开始。
政治：还没碰。

想请教大家：
一、三个小时怎么分配比较合理？是每天每科都学一点，还是一天专攻一门？
二、408 四门课的顺序有没有讲究？
三、政治什么时候开始比较合适？

先谢谢大家了！

2楼　回复者：上岸的小鱼　2025-06-03 22:45

我去年也是在职考的，分享一下。工作日建议固定两块：数学一个半小时，剩下的时间给专业课，英语单词利用通勤时间背。周末整块时间做真题和整理错题。408 可以按照数据结构、组成原理、操作系统、计算机网络的顺序，组成原理最难，要留足时间。政治九月开始完全来得及，不用焦虑。

3楼　回复者：晚风与书　2025-06-03 23:02

太感谢了！我先按这个节奏试两周，再回来汇报。"""

# --------------------------------------------------------------------------------------------
# The documents: (group, kind, lang, url, text, how it was made), ids in this order
# --------------------------------------------------------------------------------------------

DOCS: list[tuple[str, str, str, str, str, str]] = [
    # en-news-1: one article, its mirrors and revisions
    ("en-news-1", "original", "en", "https://riverside-daily.example.com/city/2025/03/14/harbor-street-bike-lanes",
     EN_NEWS_1, "original article"),
    ("en-news-1", "exact_copy", "en", "https://riverside-daily.example.com/city/2025/03/14/harbor-street-bike-lanes?utm_source=newsletter",
     EN_NEWS_1, "identical text under a tracking-parameter URL"),
    ("en-news-1", "exact_copy", "en", "https://news-aggregator.example.net/item/88213",
     respace(EN_NEWS_1), "same words, other whitespace (CRLF, tabs, doubled spaces, padding)"),
    ("en-news-1", "exact_copy", "en", "https://m.riverside-daily.example.com/city/harbor-street-bike-lanes",
     fullwidth(EN_NEWS_1), "whole text in full-width characters (U+FF01..FF5E, U+3000 spaces)"),
    ("en-news-1", "near_copy", "en", "https://riverside-daily.example.com/city/2025/03/15/harbor-street-bike-lanes",
     replace_once(EN_NEWS_1, "14 March 2025", "15 March 2025"), "date line changed"),
    ("en-news-1", "near_copy", "en", "https://syndication.example.org/riverside/harbor-street-bike-lanes",
     EN_NEWS_1 + SHARE_FOOTER, "share line and '© 2025 Example Media' footer appended"),
    ("en-news-1", "near_copy", "en", "https://riverside-daily.example.com/amp/harbor-street-bike-lanes",
     replace_once(EN_NEWS_1, " Detailed drawings are available on the council website.", ""), "last sentence removed"),
    # en-news-2: another article of the same site (same header, footer, byline format, date)
    ("en-news-2", "distinct", "en", "https://riverside-daily.example.com/city/2025/03/14/eastside-library-reopens",
     EN_NEWS_2, "different article, same site template and date"),
    # en-product-1
    ("en-product-1", "original", "en", "https://shop.copperleaf.example.com/products/gooseneck-kettle-1l",
     EN_PRODUCT_1, "product page (a review has the typo 'handel')"),
    ("en-product-1", "near_copy", "en", "https://shop.copperleaf.example.com/sale/gooseneck-kettle-1l",
     replace_once(EN_PRODUCT_1, "Price: $64.00", "Price: $59.00 (was $64.00)"), "sale price"),
    ("en-product-1", "near_copy", "en", "https://shop.copperleaf.example.com/products/gooseneck-kettle-1l?rev=2",
     replace_once(EN_PRODUCT_1, "The handel stays cool.", "The handle stays cool."), "typo fixed"),
    ("en-product-1", "exact_copy", "en", "https://copperleaf-outlet.example.net/gooseneck-kettle",
     EN_PRODUCT_1.upper(), "whole text upper-cased"),
    # en-product-2: another product of the same shop
    ("en-product-2", "distinct", "en", "https://shop.copperleaf.example.com/products/hand-grinder-30g",
     EN_PRODUCT_2, "different product, same shop template"),
    # en-blog-1
    ("en-blog-1", "original", "en", "https://trailnotes.example.com/2025/06/first-50k-trail-race",
     EN_BLOG_1, "blog post"),
    ("en-blog-1", "near_copy", "en", "https://blog-reader.example.net/trailnotes/first-50k-trail-race",
     EN_BLOG_1 + SHARE_FOOTER, "share line and copyright footer appended"),
    ("en-blog-1", "near_copy", "en", "https://trailnotes.example.com/2025/06/first-50k-trail-race?updated=1",
     replace_once(EN_BLOG_1, "12 comments", "14 comments"), "crawled later: comment count changed"),
    # en-recipe-1 and a second recipe of the same site
    ("en-recipe-1", "original", "en", "https://weeknight-pantry.example.org/recipes/red-lentil-carrot-soup",
     EN_RECIPE_1, "recipe"),
    ("en-recipe-1", "near_copy", "en", "https://weeknight-pantry.example.org/recipes/red-lentil-carrot-soup/print",
     replace_once(EN_RECIPE_1, "when you reheat it.",
                  "when you reheat it. A spoonful of yoghurt on top is good too if you do not need it vegan."),
     "one sentence added to the tip"),
    ("en-recipe-1", "exact_copy", "en", "https://recipe-box.example.net/saved/51234",
     respace(EN_RECIPE_1.replace("Red lentil and carrot soup", "RED LENTIL AND CARROT SOUP")),
     "title upper-cased and whitespace changed"),
    ("en-recipe-2", "distinct", "en", "https://weeknight-pantry.example.org/recipes/chickpea-spinach-curry",
     EN_RECIPE_2, "different recipe, same site template, overlapping ingredients"),
    # en-forum-1 and another thread of the same forum
    ("en-forum-1", "original", "en", "https://forum.homelab.example.com/t/router-drops-wifi-every-evening/4411",
     EN_FORUM_1, "forum thread"),
    ("en-forum-1", "near_copy", "en", "https://forum.homelab.example.com/t/router-drops-wifi-every-evening/4411?page=1",
     EN_FORUM_1 + "\n\nEDIT 23 May: solved! Three evenings in a row without a single drop. Thanks netgnome.",
     "an edit note appended to the thread"),
    ("en-forum-2", "distinct", "en", "https://forum.homelab.example.com/t/which-drives-for-a-4-bay-nas/4420",
     EN_FORUM_2, "different thread, same forum and a shared replier"),
    # short pages: a few tokens each
    ("en-short-404", "original", "en", "https://riverside-daily.example.com/missing-page",
     EN_SHORT_404, "error page, 4 tokens: no fingerprint"),
    ("en-short-404", "exact_copy", "en", "https://shop.copperleaf.example.com/missing-page",
     EN_SHORT_404.upper(), "upper-cased: exact after normalisation"),
    ("en-short-403", "distinct", "en", "https://forum.homelab.example.com/admin",
     EN_SHORT_403, "another short error page"),
    # zh-news-1
    ("zh-news-1", "original", "zh", "https://news.jiangcheng.example.cn/local/2025/0314/metro-line3-north.html",
     ZH_NEWS_1, "news article"),
    ("zh-news-1", "exact_copy", "zh", "https://m.jiangcheng.example.cn/a/20250314001.html",
     halfwidth_punctuation(fullwidth_alnum(ZH_NEWS_1)), "digits/Latin full-width, ，：（） half-width"),
    ("zh-news-1", "traditional_script", "zh", "https://hk.news-portal.example.com/jiangcheng/metro-line3-north",
     to_traditional(ZH_NEWS_1, "s2twp"), "OpenCC s2twp: Traditional with Taiwan vocabulary, not exact after t2s"),
    ("zh-news-1", "near_copy", "zh", "https://news.jiangcheng.example.cn/local/2025/0315/metro-line3-north.html",
     replace_once(ZH_NEWS_1, "2025年3月14日", "2025年3月15日"), "date changed"),
    ("zh-news-1", "near_copy", "zh", "https://portal.example.cn/news/jiangcheng/metro-line3-north",
     ZH_NEWS_1 + "\n\n分享到：微信 | 微博 | QQ空间\n© 2025 Example Media 版权所有", "share line and copyright footer appended"),
    ("zh-news-1", "near_copy", "zh", "https://news.jiangcheng.example.cn/amp/metro-line3-north.html",
     replace_once(ZH_NEWS_1, "新开2条接驳线，连接沿线的学校、医院和产业园区。", "新开2条接驳线。"),
     "a clause cut from one sentence"),
    ("zh-news-2", "distinct", "zh", "https://news.jiangcheng.example.cn/local/2025/0314/library-night-hours.html",
     ZH_NEWS_2, "different article, same site template, date and structure"),
    # zh-product-1 and another product of the same shop
    ("zh-product-1", "original", "zh", "https://qinghe.shop.example.cn/item/QH-BW-0500",
     ZH_PRODUCT_1, "product page"),
    ("zh-product-1", "near_copy", "zh", "https://qinghe.shop.example.cn/item/QH-BW-0500?promo=618",
     replace_once(ZH_PRODUCT_1, "价格：¥89.00", "价格：¥79.00（618活动价）"), "promotional price"),
    ("zh-product-1", "traditional_script", "zh", "https://qinghe-tw.shop.example.com/item/QH-BW-0500",
     to_traditional(ZH_PRODUCT_1), "OpenCC s2t"),
    ("zh-product-1", "exact_copy", "zh", "https://m.qinghe.shop.example.cn/item/QH-BW-0500",
     respace(ZH_PRODUCT_1), "whitespace changed"),
    ("zh-product-2", "distinct", "zh", "https://qinghe.shop.example.cn/item/QH-MK-0380",
     ZH_PRODUCT_2, "different product (also a cup), same shop template"),
    # zh-tech-1 (Chinese with English names) and another post of the same blog
    ("zh-tech-1", "original", "zh", "https://techblog.example.cn/posts/docker-compose-postgres-redis",
     ZH_TECH_1, "mixed Chinese/English post"),
    ("zh-tech-1", "near_copy", "zh", "https://techblog.example.cn/posts/docker-compose-postgres-redis?v=2",
     replace_once(ZH_TECH_1, "记录几个踩过的坑。", "记录几个踩过的坑。（2025-05 更新：已升级到 PostgreSQL 17，配置无需改动。）"),
     "update note added"),
    ("zh-tech-1", "traditional_script", "zh", "https://dev-notes.example.com/zh-hant/docker-compose-postgres-redis",
     to_traditional(ZH_TECH_1), "OpenCC s2t"),
    ("zh-tech-1", "exact_copy", "zh", "https://reader.example.net/techblog/docker-compose-postgres-redis",
     fullwidth_alnum(ZH_TECH_1), "English names and digits in full-width letters"),
    ("zh-tech-2", "distinct", "zh", "https://techblog.example.cn/posts/python-39-to-312",
     ZH_TECH_2, "different mixed post, same blog template"),
    # zh-recipe-1
    ("zh-recipe-1", "original", "zh", "https://jiachang-caipu.example.cn/recipe/fanqie-chaodan",
     ZH_RECIPE_1, "recipe"),
    ("zh-recipe-1", "near_copy", "zh", "https://jiachang-caipu.example.cn/recipe/fanqie-chaodan?from=app",
     replace_once(ZH_RECIPE_1, "喜欢酸一点的可以不放。", "喜欢酸一点的可以不放。也可以加一勺番茄酱。"),
     "one sentence added"),
    # zh-forum-1
    ("zh-forum-1", "original", "zh", "https://bbs.xueer.example.cn/thread-20250603-1.html",
     ZH_FORUM_1, "forum thread"),
    ("zh-forum-1", "traditional_script", "zh", "https://forum.example.com.tw/repost/kaoyan-schedule",
     to_traditional(ZH_FORUM_1), "OpenCC s2t (reposted on a Traditional-script forum)"),
    # empty bodies: skipped by the job
    ("empty-1", "empty", "en", "https://parked-domain.example.com/", "", "empty text"),
    ("empty-2", "empty", "zh", "https://parked-domain.example.cn/", " \n\t\u3000 \r\n", "whitespace only (incl. U+3000)"),
]


def records() -> list[dict]:
    return [
        {"id": i, "url": url, "lang": lang, "group": group, "kind": kind, "text": text}
        for i, (group, kind, lang, url, text, _) in enumerate(DOCS, start=1)
    ]


def main() -> None:
    rows = records()
    with OUT.open("w", encoding="utf-8", newline="\n") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} documents, {OUT.stat().st_size:,} bytes to {OUT}")


if __name__ == "__main__":
    main()
